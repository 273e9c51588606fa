//! A failed command: the error and the exit code it maps to.

pub struct Failure {
    pub code: u8,
    pub error: anyhow::Error,
}

pub type CmdResult = Result<(), Failure>;

/// Bad usage or bad input: exit 2.
pub fn input(error: impl Into<anyhow::Error>) -> Failure {
    Failure {
        code: 2,
        error: error.into(),
    }
}

/// Anything else (I/O on outputs): exit 1.
pub fn other(error: impl Into<anyhow::Error>) -> Failure {
    Failure {
        code: 1,
        error: error.into(),
    }
}
