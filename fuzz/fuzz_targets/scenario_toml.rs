//! A scenario TOML file (`fabricsim run FILE`): parsed and checked, not run.
#![no_main]
libfuzzer_sys::fuzz_target!(|text: &str| {
    let _ = fabricsim_cluster::scenario::Scenario::parse(text, std::path::Path::new("fuzz.toml"));
});
