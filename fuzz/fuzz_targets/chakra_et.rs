//! One Chakra `.et` file, plain or gzipped, read whole and through the import's view of the
//! schema: what reads whole, the view reads too, with as many nodes.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    use fabricsim_workload::chakra::{count_view_nodes, decode};
    let path = std::path::Path::new("fuzz.et");
    let viewed = count_view_nodes(data.to_vec(), path);
    if let Ok(trace) = decode(data.to_vec(), path) {
        assert_eq!(viewed.ok(), Some(trace.nodes.len()));
    }
});
