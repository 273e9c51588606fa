//! Running the `fabricsim` binary from integration tests.

use std::process::{Command, Output};

pub fn fabricsim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fabricsim"))
        .args(args)
        .output()
        .expect("the binary runs")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}
