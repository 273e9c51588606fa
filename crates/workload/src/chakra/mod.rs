//! Chakra execution traces (MLCommons), read and written (the schema of mlcommons/chakra,
//! `schema/protobuf/et_def.proto`).
//!
//! A trace is one file per rank, `<prefix>.<rank>.et`: a stream of protobuf messages, each
//! preceded by its length as a varint, `GlobalMetadata` first and `Node`s after; some producers
//! gzip it (detected by its magic bytes). The schema (`proto/et_def.proto`) is compiled at build
//! time by protox, a pure-Rust protobuf compiler: no system `protoc`.
//!
//! [`import`] turns traces into a [`crate::Workload`]; [`export`] writes one back out.

pub mod consistency;
pub mod export;
pub mod import;

use std::io::Read;
use std::path::{Path, PathBuf};

use prost::Message;

/// The generated schema types.
#[allow(clippy::all, missing_docs)]
pub mod pb {
    include!(concat!(env!("OUT_DIR"), "/chakra.rs"));
}

/// The import's view of a node (`proto/import_view.proto`).
#[allow(clippy::all, missing_docs)]
pub(crate) mod view {
    include!(concat!(env!("OUT_DIR"), "/chakra_view.rs"));
}

pub use export::{export, export_with};
pub use import::{import, Warning};

/// A trace file that cannot be read or written.
#[derive(Debug, thiserror::Error)]
pub enum ChakraError {
    #[error("{path}: {error}")]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("{path}: byte {offset}: {what}")]
    Decode {
        path: PathBuf,
        offset: usize,
        what: String,
    },
    #[error("{path}: empty file (a trace starts with its GlobalMetadata)")]
    Empty { path: PathBuf },
    #[error("no trace files `{prefix}.0.et`, `{prefix}.1.et`, ... found")]
    NoFiles { prefix: String },
    #[error("`{prefix}.{max}.et` exists: a trace has at most {max} ranks")]
    TooManyRanks { prefix: String, max: usize },
    #[error("{path}: node {id}: {what}")]
    Node {
        path: PathBuf,
        id: u64,
        what: String,
    },
    #[error("{path}: {what}")]
    Groups { path: PathBuf, what: String },
    #[error(transparent)]
    Graph(#[from] crate::graph::GraphError),
    /// Under `--strict`: what the import would have warned about.
    #[error("{} problem(s) under --strict: {}", .0.len(), .0.iter().map(|w| w.to_string()).collect::<Vec<_>>().join("; "))]
    Strict(Vec<Warning>),
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> ChakraError + '_ {
    move |error| ChakraError::Io {
        path: path.to_path_buf(),
        error,
    }
}

/// One rank's trace file.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RankTrace {
    pub metadata: pb::GlobalMetadata,
    pub nodes: Vec<pb::Node>,
}

/// The most bytes one `.et` file may hold once decompressed (4 GiB; the largest real traces
/// are a few MiB a rank): a small gzip cannot make the reader allocate without bound.
pub const MAX_FILE_BYTES: u64 = 4 << 30;

/// The most nodes one `.et` file may hold (16,777,216; the largest real traces hold a few
/// hundred thousand a rank): a decoded node takes some 200 bytes, so this caps a trace's nodes
/// at a few GiB of memory, where 4 GiB of two-byte records would take hundreds.
pub const MAX_NODES: usize = 1 << 24;

/// The most rank files a trace may have: 1,048,576, the most GPUs a preset builds.
pub const MAX_RANKS: usize = 1 << 20;

/// Reads one `.et` file, plain or gzipped. Limits: [`MAX_FILE_BYTES`] decompressed,
/// [`MAX_NODES`] nodes, and no empty node record (each node then takes at least two bytes of
/// the file, so memory stays a bounded multiple of the input).
pub fn read_file(path: &Path) -> Result<RankTrace, ChakraError> {
    read_file_with(path, MAX_NODES)
}

fn read_file_with(path: &Path, max_nodes: usize) -> Result<RankTrace, ChakraError> {
    let raw = std::fs::read(path).map_err(io(path))?;
    decode_with(raw, path, max_nodes)
}

/// Decodes the bytes of one `.et` file, plain or gzipped, as [`read_file`] does (`path` names
/// the file in errors).
pub fn decode(raw: Vec<u8>, path: &Path) -> Result<RankTrace, ChakraError> {
    decode_with(raw, path, MAX_NODES)
}

fn decode_with(raw: Vec<u8>, path: &Path, max_nodes: usize) -> Result<RankTrace, ChakraError> {
    let bytes = unpack(raw, path)?;
    let mut nodes = Vec::new();
    let metadata = each_record(&bytes[..], path, max_nodes, |node, _| {
        nodes.push(node);
        Ok(())
    })?;
    Ok(RankTrace { metadata, nodes })
}

/// Reads the nodes of one `.et` file as the import sees them ([`view`]), into `nodes`, under
/// [`read_file`]'s limits. Their names and string values borrow from the file's buffer, and
/// are checked to be UTF-8 as [`read_file`]'s strings are.
pub(crate) fn read_view(
    path: &Path,
    max_nodes: usize,
    nodes: &mut Vec<view::Node>,
) -> Result<(), ChakraError> {
    let raw = std::fs::read(path).map_err(io(path))?;
    decode_view(raw, path, max_nodes, nodes)
}

/// How many nodes the import's view reads from the bytes of one `.et` file, or its error (for
/// the fuzz target, which checks it against [`decode`]).
pub fn count_view_nodes(raw: Vec<u8>, path: &Path) -> Result<usize, ChakraError> {
    let mut nodes = Vec::new();
    decode_view(raw, path, MAX_NODES, &mut nodes)?;
    Ok(nodes.len())
}

fn decode_view(
    raw: Vec<u8>,
    path: &Path,
    max_nodes: usize,
    nodes: &mut Vec<view::Node>,
) -> Result<(), ChakraError> {
    let bytes = prost::bytes::Bytes::from(unpack(raw, path)?);
    nodes.clear();
    each_record(bytes, path, max_nodes, |node: view::Node, offset| {
        let strings = std::iter::once(&node.name).chain(node.attr.iter().flat_map(|a| {
            let value = match &a.value {
                Some(view::attribute::Value::StringVal(s)) => Some(s),
                _ => None,
            };
            std::iter::once(&a.name).chain(value)
        }));
        for s in strings {
            if std::str::from_utf8(s).is_err() {
                return Err(ChakraError::Decode {
                    path: path.to_path_buf(),
                    offset,
                    what: "invalid string value: data is not UTF-8 encoded".into(),
                });
            }
        }
        nodes.push(node);
        Ok(())
    })?;
    Ok(())
}

/// The bytes of one `.et` file, decompressed if gzipped, within [`MAX_FILE_BYTES`] and not
/// empty.
fn unpack(raw: Vec<u8>, path: &Path) -> Result<Vec<u8>, ChakraError> {
    let too_big = || ChakraError::Decode {
        path: path.to_path_buf(),
        offset: MAX_FILE_BYTES as usize,
        what: format!("the trace is larger than {MAX_FILE_BYTES} bytes decompressed"),
    };
    if raw.len() as u64 > MAX_FILE_BYTES {
        return Err(too_big());
    }
    let bytes = if raw.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(&raw[..])
            .take(MAX_FILE_BYTES + 1)
            .read_to_end(&mut out)
            .map_err(io(path))?;
        if out.len() as u64 > MAX_FILE_BYTES {
            return Err(too_big());
        }
        out
    } else {
        raw
    };
    if bytes.is_empty() {
        return Err(ChakraError::Empty {
            path: path.to_path_buf(),
        });
    }
    Ok(bytes)
}

/// Decodes the length-delimited records of `buf`: the metadata, returned, then each node,
/// handed to `each` with its offset; at most `max_nodes`, and none empty.
fn each_record<B: prost::bytes::Buf, N: Message + Default>(
    mut buf: B,
    path: &Path,
    max_nodes: usize,
    mut each: impl FnMut(N, usize) -> Result<(), ChakraError>,
) -> Result<pb::GlobalMetadata, ChakraError> {
    let total = buf.remaining();
    let decode_err = |offset: usize, e: prost::DecodeError| ChakraError::Decode {
        path: path.to_path_buf(),
        offset,
        what: e.to_string(),
    };
    let metadata =
        pb::GlobalMetadata::decode_length_delimited(&mut buf).map_err(|e| decode_err(0, e))?;
    let mut count = 0;
    while buf.has_remaining() {
        let offset = total - buf.remaining();
        if buf.chunk()[0] == 0 {
            return Err(ChakraError::Decode {
                path: path.to_path_buf(),
                offset,
                what: "an empty node record (a node has at least an id)".into(),
            });
        }
        if count == max_nodes {
            return Err(ChakraError::Decode {
                path: path.to_path_buf(),
                offset,
                what: format!("more than {max_nodes} nodes"),
            });
        }
        each(
            N::decode_length_delimited(&mut buf).map_err(|e| decode_err(offset, e))?,
            offset,
        )?;
        count += 1;
    }
    Ok(metadata)
}

/// Writes one `.et` file (plain), atomically: to a temporary sibling, then renamed.
pub fn write_file(path: &Path, trace: &RankTrace) -> Result<(), ChakraError> {
    let mut bytes = Vec::new();
    trace
        .metadata
        .encode_length_delimited(&mut bytes)
        .expect("a Vec grows as needed");
    for n in &trace.nodes {
        n.encode_length_delimited(&mut bytes)
            .expect("a Vec grows as needed");
    }
    write_atomic(path, &bytes)
}

/// Writes `bytes` to `path`: a regular file whole or not at all, through a symbolic link, in
/// place for a device ([`fabricsim_topology::outfile`]).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), ChakraError> {
    fabricsim_topology::outfile::write_file(path, |w| w.write_all(bytes)).map_err(io(path))
}

/// The files of a trace: `<prefix>.0.et`, `<prefix>.1.et`, ... up to the first missing rank,
/// at most [`MAX_RANKS`].
pub fn rank_files(prefix: &str) -> Result<Vec<PathBuf>, ChakraError> {
    rank_files_with(prefix, MAX_RANKS)
}

fn rank_files_with(prefix: &str, max_ranks: usize) -> Result<Vec<PathBuf>, ChakraError> {
    let mut files = Vec::new();
    loop {
        let p = PathBuf::from(format!("{prefix}.{}.et", files.len()));
        if !p.is_file() {
            break;
        }
        if files.len() == max_ranks {
            return Err(ChakraError::TooManyRanks {
                prefix: prefix.to_string(),
                max: max_ranks,
            });
        }
        files.push(p);
    }
    if files.is_empty() {
        return Err(ChakraError::NoFiles {
            prefix: prefix.to_string(),
        });
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trace(nodes: u64) -> RankTrace {
        RankTrace {
            metadata: pb::GlobalMetadata::default(),
            nodes: (1..=nodes)
                .map(|id| pb::Node {
                    id,
                    ..pb::Node::default()
                })
                .collect(),
        }
    }

    #[test]
    fn node_and_rank_counts_are_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let prefix = dir.path().join("t").to_str().unwrap().to_string();
        for rank in 0..3 {
            write_file(Path::new(&format!("{prefix}.{rank}.et")), &trace(10)).unwrap();
        }
        let file = PathBuf::from(format!("{prefix}.0.et"));
        assert_eq!(read_file_with(&file, 10).unwrap().nodes.len(), 10);
        let e = read_file_with(&file, 9).unwrap_err().to_string();
        assert!(
            e.contains("t.0.et: byte") && e.contains("more than 9 nodes"),
            "{e}"
        );
        assert_eq!(rank_files_with(&prefix, 3).unwrap().len(), 3);
        let e = rank_files_with(&prefix, 2).unwrap_err().to_string();
        assert!(
            e.contains("t.2.et` exists: a trace has at most 2 ranks"),
            "{e}"
        );
    }
}
