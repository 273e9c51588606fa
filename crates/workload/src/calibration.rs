//! The compute model against measured kernels: the CSV `tools/calibrate/measure_kernels.py`
//! writes on a GPU (columns in `docs/calibration.md`), and how far the model's times are from it.
//!
//! Each row is one kernel, timed alone: `family` (`gemm`, `attention`, `elementwise`, `copy`),
//! `kernel` (`fwd`, `dgrad`, `wgrad`; `bwd` for attention), the shape `m,n,k` (a GEMM's
//! `[m, n, k]`; attention's `[query tokens, key tokens, heads]`), the kernel's executed
//! `flops`, the `bytes` it must move, and the median time `us` in microseconds.

use std::collections::BTreeMap;

use crate::compute::ComputeModel;
use crate::graph::{Compute, OpClass};

/// One measured kernel.
#[derive(Clone, Debug, PartialEq)]
pub struct Measured {
    /// 1-based line in the file.
    pub line: usize,
    pub family: String,
    /// `mlp-up`, `attention-cudnn_attention`, ...
    pub op: String,
    /// `fwd`, `dgrad`, `wgrad`, `bwd`.
    pub kernel: String,
    /// Model, TP, op and kernel, for reports (`llama3-70b tp8 mlp-up dgrad`).
    pub name: String,
    pub compute: Compute,
    pub micros: f64,
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct CalibrationError {
    pub line: usize,
    pub message: String,
}

const COLUMNS: [&str; 12] = [
    "family", "model", "tp", "tokens", "op", "kernel", "m", "n", "k", "flops", "bytes", "us",
];

/// Reads a measured-kernels CSV. The header must name the twelve columns in order.
pub fn read_measured(text: &str) -> Result<Vec<Measured>, CalibrationError> {
    let err = |line: usize, message: String| CalibrationError { line, message };
    let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l.trim()));
    let header: Vec<&str> = match lines.next() {
        Some((_, h)) => h.split(',').map(str::trim).collect(),
        None => Vec::new(),
    };
    if header != COLUMNS {
        return Err(err(1, format!("expected the header {}", COLUMNS.join(","))));
    }
    let mut out = Vec::new();
    for (line, l) in lines.filter(|(_, l)| !l.is_empty()) {
        let f: Vec<&str> = l.split(',').map(str::trim).collect();
        if f.len() != COLUMNS.len() {
            return Err(err(line, format!("{} fields, expected 12", f.len())));
        }
        let int = |i: usize| -> Result<u64, CalibrationError> {
            f[i].parse().map_err(|_| {
                err(
                    line,
                    format!("{}: `{}` is not an integer", COLUMNS[i], f[i]),
                )
            })
        };
        let dim = |i: usize| -> Result<u32, CalibrationError> {
            u32::try_from(int(i)?).map_err(|_| err(line, format!("{}: too large", COLUMNS[i])))
        };
        let micros: f64 = f[11]
            .parse()
            .ok()
            .filter(|us: &f64| us.is_finite() && *us > 0.0)
            .ok_or_else(|| err(line, format!("us: `{}` is not a positive time", f[11])))?;
        let (family, kernel) = (f[0], f[5]);
        let class = match (family, kernel) {
            ("gemm", _) => OpClass::Gemm,
            ("attention", "bwd") => OpClass::AttentionBackward,
            ("attention", _) => OpClass::Attention,
            ("elementwise" | "copy", _) => OpClass::Elementwise,
            _ => {
                return Err(err(
                    line,
                    format!("family: `{family}`, expected gemm, attention, elementwise or copy"),
                ))
            }
        };
        let shape = [dim(6)?, dim(7)?, dim(8)?];
        let compute = Compute {
            class,
            flops: int(9)? as f64,
            bytes: int(10)? as f64,
            shape: (shape != [0, 0, 0]).then_some(shape),
            duration: None,
        };
        let name = [f[1], &format!("tp{}", f[2]), f[4], kernel]
            .iter()
            .filter(|s| !s.is_empty())
            .copied()
            .collect::<Vec<_>>()
            .join(" ");
        out.push(Measured {
            line,
            family: family.to_string(),
            op: f[4].to_string(),
            kernel: kernel.to_string(),
            name,
            compute,
            micros,
        });
    }
    Ok(out)
}

/// How far the model is from the measurements of one family (or of one kernel implementation
/// within a family, such as cuDNN's attention).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Fit {
    pub kernels: usize,
    /// Root mean square of `ln(model / measured)` (0.05 ≈ 5 %).
    pub rms_log_error: f64,
    /// The worst `model / measured − 1`, signed.
    pub worst_error: f64,
    /// The kernel with that error.
    pub worst: String,
    /// Model time over measured time, summed: the bias on a mix of these kernels.
    pub total_ratio: f64,
}

/// The fit per group; `group` names a row's group (rows it maps to `None` are left out).
pub fn compare(
    model: &ComputeModel,
    rows: &[Measured],
    group: impl Fn(&Measured) -> Option<String>,
) -> BTreeMap<String, Fit> {
    let mut acc: BTreeMap<String, Vec<(&Measured, f64)>> = BTreeMap::new();
    for r in rows {
        if let Some(g) = group(r) {
            let us = model.time(&r.compute).0 as f64 / 1e3;
            acc.entry(g).or_default().push((r, us));
        }
    }
    acc.into_iter()
        .map(|(g, v)| {
            let n = v.len() as f64;
            let sq: f64 = v.iter().map(|(r, us)| (us / r.micros).ln().powi(2)).sum();
            let (worst_row, worst_us) = v
                .iter()
                .max_by(|a, b| {
                    let ea = (a.1 / a.0.micros - 1.0).abs();
                    let eb = (b.1 / b.0.micros - 1.0).abs();
                    ea.total_cmp(&eb)
                })
                .copied()
                .expect("a group has a row");
            let model_total: f64 = v.iter().map(|(_, us)| us).sum();
            let measured_total: f64 = v.iter().map(|(r, _)| r.micros).sum();
            let fit = Fit {
                kernels: v.len(),
                rms_log_error: (sq / n).sqrt(),
                worst_error: worst_us / worst_row.micros - 1.0,
                worst: worst_row.name.clone(),
                total_ratio: model_total / measured_total,
            };
            (g, fit)
        })
        .collect()
}
