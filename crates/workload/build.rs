//! Compiles the Chakra schema with protox (a pure-Rust protobuf compiler): no system `protoc`.

fn main() {
    let proto = "proto/et_def.proto";
    println!("cargo:rerun-if-changed={proto}");
    let descriptors = match protox::compile([proto], ["proto"]) {
        Ok(d) => d,
        Err(e) => panic!("the bundled Chakra schema does not compile: {e}"),
    };
    if let Err(e) = prost_build::Config::new().compile_fds(descriptors) {
        panic!("generating the Chakra messages failed: {e}");
    }
}
