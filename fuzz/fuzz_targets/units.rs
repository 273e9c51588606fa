//! Sizes, rates and times as every file and flag writes them.
#![no_main]
use fabricsim_topology::{Bandwidth, Bytes, Nanos};

libfuzzer_sys::fuzz_target!(|text: &str| {
    let _ = text.parse::<Bytes>();
    let _ = text.parse::<Bandwidth>();
    let _ = text.parse::<Nanos>();
});
