//! `fabricsim calibrate`: the compute model against kernels measured on a GPU
//! (docs/calibration.md).

use std::path::PathBuf;

use anyhow::anyhow;
use clap::Args;
use fabricsim_workload::calibration::{compare, read_measured, Measured};
use fabricsim_workload::{ComputeModel, GpuSpec};

use crate::bench::bad;
use crate::failure::{input, other, CmdResult};
use crate::output::write_output;

#[derive(Args)]
pub struct CalibrateArgs {
    /// Measured kernels: the CSV tools/calibrate/measure_kernels.py writes.
    measured: PathBuf,
    /// The GPU the kernels ran on.
    #[arg(long, default_value = "H100", value_parser = crate::choices::gpus(), ignore_case = true)]
    gpu: String,
    /// Print the fits as JSON.
    #[arg(long)]
    json: bool,
}

/// A row's group: its family, and for attention the implementation and pass
/// (`attention-cudnn_attention bwd`).
fn group(r: &Measured) -> Option<String> {
    Some(if r.family == "attention" {
        format!("{} {}", r.op, r.kernel)
    } else {
        r.family.clone()
    })
}

pub fn run(args: CalibrateArgs) -> CmdResult {
    let gpu = GpuSpec::named(&args.gpu).ok_or_else(|| {
        let names = GpuSpec::names().join(", ");
        bad("gpu", &args.gpu, &format!("one of {names}"))
    })?;
    let path = args.measured.display().to_string();
    let text =
        std::fs::read_to_string(&args.measured).map_err(|e| input(anyhow!("{path}: {e}")))?;
    let rows = read_measured(&text).map_err(|e| input(anyhow!("{path}: {e}")))?;
    if rows.is_empty() {
        return Err(input(anyhow!("{path}: no measured kernels")));
    }
    let model = ComputeModel::new(gpu);
    let fits = compare(&model, &rows, group);
    write_output(None, |out| {
        if args.json {
            serde_json::to_writer_pretty(&mut *out, &fits)?;
            return writeln!(out);
        }
        writeln!(
            out,
            "compute model for {} against {} measured kernels (model / measured)",
            gpu.name,
            rows.len()
        )?;
        writeln!(
            out,
            "{:<34} {:>7} {:>9} {:>9} {:>8}  worst kernel",
            "group", "kernels", "rms err", "total", "worst"
        )?;
        for (g, f) in &fits {
            writeln!(
                out,
                "{:<34} {:>7} {:>8.1}% {:>9.3} {:>+7.1}%  {}",
                g,
                f.kernels,
                f.rms_log_error * 100.0,
                f.total_ratio,
                f.worst_error * 100.0,
                f.worst
            )?;
        }
        Ok(())
    })
    .map_err(other)
}
