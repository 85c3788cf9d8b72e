//! A real sepp server for tests (cargo feature `testing`).
//!
//! [`TestServer`] runs the `sepp` binary as a cluster of one (`sepp serve`)
//! on free loopback ports, with its data in a temporary folder, and returns
//! once the node is ready (its `/readyz` answers 200: it leads and has
//! applied its log). Dropping it kills the process and removes the folder.
//! Jobs go through the same state machine, leases, retries and dead-letter
//! rules as in production.
//!
//! ```no_run
//! use sepp_rs::testing::TestServer;
//! use sepp_rs::EnqueueRequest;
//!
//! #[tokio::test]
//! async fn welcome() {
//!     let server = TestServer::builder()
//!         .config("[[queues]]\nname = \"emails\"\ndefault_max_attempts = 2\n")
//!         .start()
//!         .await
//!         .expect("start sepp");
//!     let client = server.client().await.unwrap();
//!     client.enqueue(EnqueueRequest::new("emails", "welcome").unwrap()).await.unwrap();
//! }
//! ```
//!
//! The binary is the one [`Builder::binary`] names, else `$SEPP_BIN`, else
//! `sepp` on `PATH`. Enable the feature for tests only:
//!
//! ```toml
//! [dev-dependencies]
//! sepp_rs = { version = "0.1", features = ["testing"] }
//! ```

use std::fs::File;
use std::io;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use hyper::{Client, StatusCode, Uri};

use crate::client::{ClientOptions, SeppClient};
use crate::Error;

/// The sepp binary to run: `binary` if given, else `$SEPP_BIN`, else `sepp`
/// on `PATH`. The error (`NotFound`) names all three when none is there.
pub fn find_binary(binary: Option<&Path>) -> io::Result<PathBuf> {
    if let Some(p) = binary {
        if !p.is_file() {
            return Err(not_found(format!("sepp binary {} does not exist", p.display())));
        }
        return Ok(p.to_path_buf());
    }
    if let Some(env) = std::env::var_os("SEPP_BIN").filter(|v| !v.is_empty()) {
        let p = PathBuf::from(&env);
        if !p.is_file() {
            return Err(not_found(format!("SEPP_BIN names {}, which does not exist", p.display())));
        }
        return Ok(p);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        let p = dir.join("sepp");
        if is_executable(&p) {
            return Ok(p);
        }
    }
    Err(not_found(
        "no sepp binary: set SEPP_BIN to its path, or put `sepp` on PATH (in a checkout of the server: `make build` writes bin/sepp)".to_string(),
    ))
}

fn not_found(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::NotFound, msg)
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    p.metadata().map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0).unwrap_or(false)
}

/// How [`TestServer`] runs the server; from [`TestServer::builder`].
#[derive(Clone, Debug)]
pub struct Builder {
    config: String,
    binary: Option<PathBuf>,
    startup_timeout: Duration,
}

impl Builder {
    /// TOML as in a `sepp serve` config file: `[limits]`, `[storage]`,
    /// `[[queues]]` (the node's addresses and data dir are the server's,
    /// given on its command line).
    pub fn config(mut self, toml: impl Into<String>) -> Self {
        self.config = toml.into();
        self
    }

    /// The sepp binary, instead of `$SEPP_BIN` or `sepp` on `PATH`.
    pub fn binary(mut self, path: impl Into<PathBuf>) -> Self {
        self.binary = Some(path.into());
        self
    }

    /// How long to wait for the node to be ready (30 s).
    pub fn startup_timeout(mut self, timeout: Duration) -> Self {
        self.startup_timeout = timeout;
        self
    }

    /// Starts the node and waits until it is ready. A port another process
    /// takes between choosing and binding it is retried on other ports,
    /// twice. The error carries the end of the server's log.
    pub async fn start(self) -> io::Result<TestServer> {
        let binary = find_binary(self.binary.as_deref())?;
        let dir = temp_dir()?;
        let mut tries = 1;
        loop {
            match launch(&binary, &dir, &self, tries == 3).await {
                Ok(Some(server)) => return Ok(server),
                Ok(None) => tries += 1,
                Err(e) => {
                    let _ = std::fs::remove_dir_all(&dir);
                    return Err(e);
                }
            }
        }
    }
}

/// One `sepp serve` node for a test; killed, and its folder removed, on drop.
#[derive(Debug)]
pub struct TestServer {
    child: Option<Child>,
    dir: PathBuf,
    addr: String,
    http_addr: String,
    url: String,
}

impl TestServer {
    /// A server with the defaults; see [`Builder::start`].
    pub async fn start() -> io::Result<TestServer> {
        TestServer::builder().start().await
    }

    /// Options for the server: its config, the binary, the startup timeout.
    pub fn builder() -> Builder {
        Builder {
            config: String::new(),
            binary: None,
            startup_timeout: Duration::from_secs(30),
        }
    }

    /// The API's URL, `http://127.0.0.1:PORT`, for [`SeppClient::connect`].
    pub fn url(&self) -> &str {
        &self.url
    }

    /// `127.0.0.1:PORT` of the API (gRPC and Connect).
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// `127.0.0.1:PORT` of /metrics, /healthz, /readyz and the admin UI.
    pub fn http_addr(&self) -> &str {
        &self.http_addr
    }

    /// The temporary folder: the config, the log (`sepp.log`) and `data/`.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// A client of this server.
    pub async fn client(&self) -> Result<SeppClient, Error> {
        SeppClient::connect_with(&[self.url.as_str()], ClientOptions::default()).await
    }

    /// The end of the server's log (the last 8 KiB), for a failing test's
    /// message.
    pub fn logs(&self) -> String {
        read_log(&self.dir)
    }

    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

static DIRS: AtomicUsize = AtomicUsize::new(0);

fn temp_dir() -> io::Result<PathBuf> {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
    let dir = std::env::temp_dir().join(format!("sepp-test-{}-{}-{}", std::process::id(), DIRS.fetch_add(1, Ordering::SeqCst), nanos));
    std::fs::create_dir(&dir)?;
    Ok(dir)
}

/// Three loopback ports free a moment ago.
fn free_ports() -> io::Result<[u16; 3]> {
    let held = [TcpListener::bind("127.0.0.1:0")?, TcpListener::bind("127.0.0.1:0")?, TcpListener::bind("127.0.0.1:0")?];
    Ok([held[0].local_addr()?.port(), held[1].local_addr()?.port(), held[2].local_addr()?.port()])
}

/// One start on fresh ports: the server once ready, `None` when a port was
/// taken (and this is not the last try).
async fn launch(binary: &Path, dir: &Path, opts: &Builder, last_try: bool) -> io::Result<Option<TestServer>> {
    let [grpc, http, raft] = free_ports()?;
    let addr = format!("127.0.0.1:{}", grpc);
    let http_addr = format!("127.0.0.1:{}", http);
    let mut cmd = Command::new(binary);
    cmd.arg("serve")
        .args(["--grpc-addr", &addr, "--http-addr", &http_addr])
        .arg("--raft-addr")
        .arg(format!("127.0.0.1:{}", raft))
        .arg("--data-dir")
        .arg(dir.join("data"));
    if !opts.config.is_empty() {
        std::fs::write(dir.join("sepp.toml"), &opts.config)?;
        cmd.arg("--config").arg(dir.join("sepp.toml"));
    }
    let log = File::create(dir.join("sepp.log"))?;
    cmd.stdin(Stdio::null()).stdout(log.try_clone()?).stderr(log);
    let mut child = cmd.spawn().map_err(|e| io::Error::new(e.kind(), format!("start {}: {}", binary.display(), e)))?;
    let http = Client::new();
    let readyz: Uri = format!("http://{}/readyz", http_addr).parse().map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, format!("{}", e)))?;
    let deadline = Instant::now() + opts.startup_timeout;
    while Instant::now() < deadline {
        if let Some(status) = child.try_wait()? {
            let logs = read_log(dir);
            if logs.contains("address already in use") && !last_try {
                return Ok(None);
            }
            return Err(io::Error::new(io::ErrorKind::Other, format!("sepp serve exited ({}) before it was ready:\n{}", status, logs)));
        }
        if let Ok(Ok(resp)) = tokio::time::timeout(Duration::from_secs(1), http.get(readyz.clone())).await {
            if resp.status() == StatusCode::OK {
                return Ok(Some(TestServer {
                    child: Some(child),
                    dir: dir.to_path_buf(),
                    url: format!("http://{}", addr),
                    addr,
                    http_addr,
                }));
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let _ = child.kill();
    let _ = child.wait();
    Err(io::Error::new(
        io::ErrorKind::TimedOut,
        format!("sepp serve was not ready within {:?}:\n{}", opts.startup_timeout, read_log(dir)),
    ))
}

/// The end of the log in dir (the last 8 KiB).
fn read_log(dir: &Path) -> String {
    let text = std::fs::read(dir.join("sepp.log")).unwrap_or_default();
    String::from_utf8_lossy(&text[text.len().saturating_sub(8192)..]).into_owned()
}
