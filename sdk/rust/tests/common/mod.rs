//! A real local sepp cluster for the tests: the repository's `bin/sepp`
//! (`make build`; `SEPP_BIN` names another), three `sepp serve` processes
//! on loopback with configs written here (as the Python SDK's tests do),
//! killed and their folder removed on drop. Every node keeps dead letters
//! for a day, so drains have something to return.
#![allow(dead_code)]

use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sepp_rs::{ClientOptions, SeppClient};

pub const RETENTION: &str =
    "[storage]\ndead_letter_retention_ms = 86400000\n\n[[queues]]\nname = \"rs-kept\"\ncompleted_retention_ms = 3600000\n";

pub fn sepp_bin() -> PathBuf {
    let p = match std::env::var_os("SEPP_BIN") {
        Some(p) => PathBuf::from(p),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bin/sepp"),
    };
    assert!(p.is_file(), "{} is missing: run `make build` at the repository root (or set SEPP_BIN)", p.display());
    p
}

pub struct Node {
    pub id: String,
    /// host:port of the API (gRPC and Connect).
    pub addr: String,
    dir: PathBuf,
    child: Option<Child>,
}

pub struct Cluster {
    pub nodes: Vec<Node>,
    root: PathBuf,
}

fn free_ports(n: usize) -> Vec<u16> {
    let held: Vec<TcpListener> = (0..n).map(|_| TcpListener::bind("127.0.0.1:0").expect("bind a free port")).collect();
    held.iter().map(|l| l.local_addr().expect("local addr").port()).collect()
}

static DIRS: AtomicUsize = AtomicUsize::new(0);

impl Cluster {
    /// Three nodes on the given ports (API, HTTP, raft for each) or free
    /// ones. The nodes get SIGKILL when the thread that started them ends
    /// (PR_SET_PDEATHSIG), so a test process that dies leaves none behind.
    pub fn start(extra: &str, ports: Option<Vec<u16>>) -> Cluster {
        let bin = sepp_bin();
        let ports = ports.unwrap_or_else(|| free_ports(9));
        let root = std::env::temp_dir().join(format!("sepp-rs-rust-{}-{}", std::process::id(), DIRS.fetch_add(1, Ordering::SeqCst)));
        let _ = std::fs::remove_dir_all(&root);
        let mut nodes: Vec<Node> = (0..3)
            .map(|i| Node {
                id: format!("sepp-{}", i + 1),
                addr: format!("127.0.0.1:{}", ports[3 * i]),
                dir: root.join(format!("sepp-{}", i + 1)),
                child: None,
            })
            .collect();
        let peers: String = (0..3)
            .map(|i| {
                format!(
                    "  {{ id = \"{}\", raft_addr = \"127.0.0.1:{}\", grpc_addr = \"{}\", http_addr = \"127.0.0.1:{}\" }},\n",
                    nodes[i].id,
                    ports[3 * i + 2],
                    nodes[i].addr,
                    ports[3 * i + 1]
                )
            })
            .collect();
        for (i, n) in nodes.iter().enumerate() {
            std::fs::create_dir_all(&n.dir).expect("node dir");
            let config = format!(
                "[server]\nnode_id = \"{}\"\ngrpc_addr = \"{}\"\nhttp_addr = \"127.0.0.1:{}\"\nraft_addr = \"127.0.0.1:{}\"\ndata_dir = \"{}\"\n\n[cluster]\ndetect_leader_crash = true\npeers = [\n{}]\n\n{}\n",
                n.id,
                n.addr,
                ports[3 * i + 1],
                ports[3 * i + 2],
                n.dir.join("data").display(),
                peers,
                extra
            );
            std::fs::write(n.dir.join("sepp.toml"), config).expect("write config");
        }
        for n in nodes.iter_mut() {
            let log = std::fs::File::create(n.dir.join("sepp.log")).expect("log file");
            let mut cmd = Command::new(&bin);
            cmd.arg("serve")
                .arg("--config")
                .arg(n.dir.join("sepp.toml"))
                .stdin(Stdio::null())
                .stdout(log.try_clone().expect("log"))
                .stderr(log);
            unsafe {
                cmd.pre_exec(|| {
                    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                    Ok(())
                });
            }
            n.child = Some(cmd.spawn().expect("start sepp serve"));
        }
        Cluster { nodes, root }
    }

    pub fn addrs(&self) -> Vec<String> {
        self.nodes.iter().map(|n| format!("http://{}", n.addr)).collect()
    }

    /// A client of every node, with a retry budget long enough for a
    /// cluster that is still electing its first leader.
    pub async fn client(&self) -> SeppClient {
        let addrs = self.addrs();
        let refs: Vec<&str> = addrs.iter().map(String::as_str).collect();
        let opts = ClientOptions {
            retry_timeout: Duration::from_secs(60),
            ..ClientOptions::default()
        };
        SeppClient::connect_with(&refs, opts).await.unwrap_or_else(|e| panic!("no leader: {}\n{}", e, self.logs()))
    }

    pub fn index_of(&self, addr: &str) -> usize {
        let host = addr.trim_start_matches("http://");
        self.nodes.iter().position(|n| n.addr == host).unwrap_or_else(|| panic!("{} is no node of the cluster", addr))
    }

    /// SIGKILL node i, as a crash would.
    pub fn kill(&mut self, i: usize) {
        if let Some(mut c) = self.nodes[i].child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    pub fn logs(&self) -> String {
        self.nodes
            .iter()
            .map(|n| {
                let text = std::fs::read_to_string(n.dir.join("sepp.log")).unwrap_or_default();
                let tail = &text[text.len().saturating_sub(3000)..];
                format!("--- {}\n{}", n.id, tail)
            })
            .collect()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for i in 0..self.nodes.len() {
            self.kill(i);
        }
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// The cluster the tests of one test binary share (each with queues of
/// its own), started once, from a thread that outlives every test so its
/// nodes live as long as the process.
pub fn shared() -> Arc<Cluster> {
    static SHARED: Mutex<Option<Arc<Cluster>>> = Mutex::new(None);
    let mut guard = SHARED.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(c) = guard.as_ref() {
        return c.clone();
    }
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let c = Arc::new(Cluster::start(RETENTION, None));
        tx.send(c).expect("hand the cluster over");
        loop {
            std::thread::park();
        }
    });
    let c = rx.recv().expect("the cluster thread");
    *guard = Some(c.clone());
    c
}

/// Waits for cond, polling, until timeout.
pub async fn wait_for<F, Fut>(what: &str, timeout: Duration, mut cond: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + timeout;
    while !cond().await {
        assert!(Instant::now() < deadline, "timed out waiting for {}", what);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
