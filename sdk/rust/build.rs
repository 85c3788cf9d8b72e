// Generates the prost messages of the public API from the repository's
// proto/sepp/v1 (the same files the server is built from). Needs protoc
// (Debian's protobuf-compiler, whose /usr/include holds the well-known
// types); PROTOC names another one.
use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../proto");
    let files: Vec<PathBuf> = ["types.proto", "errors.proto", "queue_service.proto", "admin_service.proto", "cluster_service.proto"]
        .iter()
        .map(|f| root.join("sepp/v1").join(f))
        .collect();
    for f in &files {
        println!("cargo:rerun-if-changed={}", f.display());
    }
    println!("cargo:rerun-if-env-changed=PROTOC");
    prost_build::Config::new().compile_protos(&files, &[root])?;
    Ok(())
}
