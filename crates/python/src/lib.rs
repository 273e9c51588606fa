//! `fabricsim._native`: the command line, called in process from Python.
//!
//! The Python package (`python/fabricsim`) is a front end like the CLI: it turns a call such as
//! `fabricsim.bench(gpus=128, routing="eecmp")` into the command line `bench --gpus 128 --routing
//! eecmp --json`, runs it here, and reads the JSON. So it has no simulation logic of its own, its
//! results are the CLI's, field for field, and its errors carry the CLI's messages. The GIL is
//! released while a command runs.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// Runs `fabricsim ARGV…` and returns `(status, stdout, error)`: the exit status (0, 1 or 2),
/// what the command printed, and the error message (empty on success).
#[pyfunction]
fn main(py: Python<'_>, argv: Vec<String>) -> (u8, String, String) {
    py.detach(move || {
        let args = std::iter::once("fabricsim".to_string()).chain(argv);
        let (outcome, stdout) = fabricsim_cli::capture_stdout(|| fabricsim_cli::execute(args));
        let stdout = String::from_utf8_lossy(&stdout).into_owned();
        match outcome {
            Ok(()) => (0, stdout, String::new()),
            Err(e) => (e.code, stdout, e.message),
        }
    })
}

/// A JSON document (a scenario given as a dict) as TOML, the scenario files' format.
#[pyfunction]
fn toml_from_json(json: &str) -> PyResult<String> {
    let value: toml::Value =
        serde_json::from_str(json).map_err(|e| PyValueError::new_err(e.to_string()))?;
    toml::to_string(&value).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// Which of `points` (cost, objective or None) are on the Pareto front, by the rule of
/// `fabricsim sweep` (`fabricsim_cluster::design::pareto`).
#[pyfunction]
fn pareto(points: Vec<(f64, Option<f64>)>, maximize: bool) -> Vec<bool> {
    fabricsim_cluster::design::pareto(&points, maximize)
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(main, m)?)?;
    m.add_function(wrap_pyfunction!(toml_from_json, m)?)?;
    m.add_function(wrap_pyfunction!(pareto, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
