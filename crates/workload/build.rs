//! Compiles the Chakra schema with protox (a pure-Rust protobuf compiler): no system `protoc`.
//! `import_view.proto` is the import's view of the same wire format, its strings as shared
//! byte buffers (`bytes::Bytes`).

fn main() {
    let protos = ["proto/et_def.proto", "proto/import_view.proto"];
    for proto in protos {
        println!("cargo:rerun-if-changed={proto}");
    }
    let descriptors = match protox::compile(protos, ["proto"]) {
        Ok(d) => d,
        Err(e) => panic!("the bundled Chakra schema does not compile: {e}"),
    };
    if let Err(e) = prost_build::Config::new()
        .bytes([".chakra_view"])
        .compile_fds(descriptors)
    {
        panic!("generating the Chakra messages failed: {e}");
    }
}
