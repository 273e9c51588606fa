//! File formats: the explicit JSON topology format (read and written, byte-identical round
//! trip) and Graphviz DOT (written, for small fabrics). Both are documented in
//! `docs/formats/`.

mod dot;
mod json;

pub use dot::{write_dot, MAX_DOT_NODES};
pub use json::{read_json, write_json, FORMAT_NAME, FORMAT_VERSION};

/// Why a topology file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum FormatError {
    /// Not JSON, or JSON of the wrong shape; `line` and `column` are 1-based.
    #[error("line {line}, column {column}: {message}")]
    Syntax {
        line: usize,
        column: usize,
        message: String,
    },
    /// Well-formed, but a value is wrong; `at` names the place (`nodes[12].tier`).
    #[error("{at}: {message}")]
    Invalid { at: String, message: String },
    /// The nodes and links do not make a valid fabric; cable `i` is `links[i]`.
    #[error("{0}")]
    Topology(#[from] crate::TopologyError),
    #[error("{0}")]
    Io(#[from] std::io::Error),
}
