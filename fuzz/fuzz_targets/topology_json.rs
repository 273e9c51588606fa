//! A topology JSON file (`--file`): parsed, resolved and validated, or an error.
#![no_main]
libfuzzer_sys::fuzz_target!(|text: &str| {
    let _ = fabricsim_topology::format::read_json(text);
});
