//! One Chakra `.et` file, plain or gzipped.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = fabricsim_workload::chakra::decode(data.to_vec(), std::path::Path::new("fuzz.et"));
});
