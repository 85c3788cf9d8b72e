//! sepp_rs::testing itself: finding the binary, failing clearly, cleaning
//! up. Cargo.toml runs it with `--features testing` only (make sdk-rust
//! passes it).

mod common;

use std::io::ErrorKind;
use std::os::unix::fs::PermissionsExt;

use sepp_rs::testing::{find_binary, TestServer};

/// The only test here that changes the environment (std's env lock keeps
/// the others' process starts from reading it half-changed).
#[test]
fn find_binary_names_every_place_it_looked() {
    let empty = std::env::temp_dir().join(format!("sepp-rs-path-{}", std::process::id()));
    std::fs::create_dir_all(&empty).unwrap();
    let (saved_bin, saved_path) = (std::env::var_os("SEPP_BIN"), std::env::var_os("PATH"));

    std::env::remove_var("SEPP_BIN");
    std::env::set_var("PATH", &empty);
    let e = find_binary(None).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound);
    assert!(e.to_string().contains("set SEPP_BIN to its path, or put `sepp` on PATH"), "{}", e);

    // sepp on PATH counts once it is an executable file.
    let fake = empty.join("sepp");
    std::fs::write(&fake, "#!/bin/sh\n").unwrap();
    assert!(find_binary(None).is_err());
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(find_binary(None).unwrap(), fake);

    std::env::set_var("SEPP_BIN", empty.join("nope"));
    let e = find_binary(None).unwrap_err();
    assert!(e.to_string().contains("SEPP_BIN names") && e.to_string().contains("nope"), "{}", e);
    let e = find_binary(Some(&empty.join("missing"))).unwrap_err();
    assert!(e.to_string().contains("does not exist"), "{}", e);

    match saved_bin {
        Some(v) => std::env::set_var("SEPP_BIN", v),
        None => std::env::remove_var("SEPP_BIN"),
    }
    std::env::set_var("PATH", saved_path.unwrap_or_default());
    let _ = std::fs::remove_dir_all(&empty);
}

#[tokio::test]
async fn drop_kills_the_server_and_removes_its_folder() {
    let server = TestServer::builder().binary(common::sepp_bin()).start().await.expect("start sepp");
    let dir = server.dir().to_path_buf();
    assert!(dir.join("data").is_dir());
    assert!(server.url().starts_with("http://127.0.0.1:"));
    let addr = server.addr().to_string();
    let client = server.client().await.unwrap();
    assert!(client.server_info().await.is_ok());
    drop(server);
    assert!(!dir.exists(), "{} is still there", dir.display());
    assert!(std::net::TcpStream::connect(&addr).is_err(), "something still listens on {}", addr);
}

#[tokio::test]
async fn a_config_the_server_refuses_fails_start_with_its_log() {
    let e = TestServer::builder()
        .binary(common::sepp_bin())
        .config("[limits]\ndefault_priority = 12\n")
        .start()
        .await
        .unwrap_err();
    let msg = e.to_string();
    assert!(msg.contains("exited (exit status: 1) before it was ready") && msg.contains("default_priority"), "{}", msg);
}
