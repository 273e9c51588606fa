//! Progress bars on stderr for the long commands (indicatif): drawn only on a terminal, so
//! redirected output and CI logs stay clean.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A bar of `len` steps counting `what` (`runs`, `ops`); a spinner with a count when `len` is
/// not known in advance (0).
pub fn bar(len: u64, what: &str) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
    let style = if len > 0 {
        ProgressStyle::with_template(&format!(
            "  [{{elapsed_precise}}] {{bar:30}} {{pos}}/{{len}} {what} {{msg}} (eta {{eta}})"
        ))
    } else {
        bar.set_length(u64::MAX);
        ProgressStyle::with_template(&format!(
            "  [{{elapsed_precise}}] {{spinner}} {{pos}} {what} {{msg}}"
        ))
    };
    bar.set_style(style.expect("a valid template"));
    bar
}
