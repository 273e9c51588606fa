//! The compute model against the kernels measured on an H100 SXM (docs/calibration.md).

use fabricsim_workload::calibration::{compare, read_measured, Measured};
use fabricsim_workload::{ComputeModel, GpuSpec};

fn measured() -> Vec<Measured> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/calibration/h100-sxm.csv"
    );
    read_measured(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The groups the defaults were fitted on: every GEMM, cuDNN's attention (the fused kernel
/// Hopper training stacks use), and the streaming kernels a fused layer's element-wise work is.
fn group(r: &Measured) -> Option<String> {
    match r.family.as_str() {
        "gemm" => Some("gemm".into()),
        "attention" if r.op.contains("cudnn") => Some(format!("attention {}", r.kernel)),
        "copy" => Some("memory".into()),
        "elementwise" if r.op == "residual-add" => Some("memory".into()),
        _ => None,
    }
}

#[test]
fn the_default_model_fits_the_h100_measurements() {
    let rows = measured();
    assert_eq!(rows.len(), 245);
    let model = ComputeModel::new(GpuSpec::named("H100").unwrap());
    let fits = compare(&model, &rows, group);
    let names: Vec<&str> = fits.keys().map(String::as_str).collect();
    assert_eq!(names, ["attention bwd", "attention fwd", "gemm", "memory"]);
    for (g, f) in &fits {
        // What tools/calibrate/fit.py reached, with a margin for the rounding of the defaults.
        assert!(f.rms_log_error < 0.06, "{g}: {f:?}");
        assert!(f.worst_error.abs() < 0.20, "{g}: {f:?}");
        assert!((f.total_ratio - 1.0).abs() < 0.05, "{g}: {f:?}");
    }
    assert_eq!(fits["gemm"].kernels, 163);
    assert_eq!(fits["attention fwd"].kernels, 18);
}

#[test]
fn the_uncalibrated_flash_backend_is_slower_than_the_model() {
    // PyTorch's own flash-attention backend (FlashAttention-2) runs about half as fast as cuDNN's
    // on Hopper: the model, fitted to cuDNN, is optimistic for it, and says so in the figures.
    let rows = measured();
    let model = ComputeModel::new(GpuSpec::named("H100").unwrap());
    let flash = compare(&model, &rows, |r| {
        r.op.contains("flash").then(|| "flash".to_string())
    });
    assert!(flash["flash"].total_ratio < 0.7, "{:?}", flash["flash"]);
}

#[test]
fn bad_rows_are_named() {
    let header = "family,model,tp,tokens,op,kernel,m,n,k,flops,bytes,us\n";
    let e = read_measured("a,b\n").unwrap_err();
    assert_eq!(e.line, 1);
    assert!(e.to_string().contains("expected the header"), "{e}");
    let e = read_measured(&format!("{header}gemm,,1,0,x,fwd,1,2,3,4,5,-1\n")).unwrap_err();
    assert_eq!(e.to_string(), "line 2: us: `-1` is not a positive time");
    let e = read_measured(&format!("{header}\ntpu,,1,0,x,fwd,1,2,3,4,5,1\n")).unwrap_err();
    assert_eq!(e.line, 3);
    assert!(e.to_string().contains("family: `tpu`"), "{e}");
    let e = read_measured(&format!("{header}gemm,,1,0,x,fwd,1,2,3,4.5,5,1\n")).unwrap_err();
    assert!(
        e.to_string().contains("flops: `4.5` is not an integer"),
        "{e}"
    );
}
