//! Starting `nats-server` processes on free loopback ports, each with JetStream in its own
//! directory: one server, or a cluster whose nodes can be killed and restarted. For tests,
//! benchmarks and trying the store out; the server binary is `$TURNSTILE_NATS_SERVER`, else
//! `nats-server` on the `PATH`, else `/usr/sbin/nats-server`.
//!
//! A server is ready when a connection to its port gets the `INFO` line of *this* server (its
//! unique name, and its cluster's): a port that merely accepts may be another process's (the
//! free port was taken again between its probe and the server's bind, or a probe connected to
//! itself on an ephemeral port), and the server only accepts clients once JetStream is up. A
//! server that exits before that is started again on other free ports.

use std::io::{BufRead, BufReader};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// One running `nats-server` (killed when dropped).
#[derive(Debug)]
pub struct LocalNats {
    child: Option<Child>,
    args: Vec<String>,
    port: u16,
    /// What this server's `INFO` says about itself: `server_name`, and `cluster` if any.
    name: String,
    cluster: Option<String>,
}

/// How long a server may take to answer its first connection.
const READY_WAIT: Duration = Duration::from_secs(15);

/// How many times a server that exits at start is started again on other ports.
const START_TRIES: usize = 4;

/// The server binary to run.
pub fn server_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("TURNSTILE_NATS_SERVER") {
        return PathBuf::from(path);
    }
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("nats-server"))
            .find(|p| p.is_file())
    });
    on_path.unwrap_or_else(|| PathBuf::from("/usr/sbin/nats-server"))
}

fn free_port() -> std::io::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// A name no other server started by any process here has.
fn unique_name(what: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!(
        "{what}-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Why a server did not become ready.
enum NotReady {
    /// It exited (most likely its port was taken): start it again elsewhere.
    Exited(std::io::Error),
    /// It runs but does not answer.
    Failed(std::io::Error),
}

impl NotReady {
    fn into_error(self) -> std::io::Error {
        match self {
            NotReady::Exited(e) | NotReady::Failed(e) => e,
        }
    }
}

/// The arguments of a JetStream server named `name` on 127.0.0.1:`port`, storing under `dir`.
fn server_args(port: u16, dir: &Path, name: &str) -> Vec<String> {
    vec![
        "-a".into(),
        "127.0.0.1".into(),
        "-p".into(),
        port.to_string(),
        "-js".into(),
        "-sd".into(),
        dir.display().to_string(),
        "-n".into(),
        name.into(),
    ]
}

/// `start` again while what it started exited at start, [`START_TRIES`] times in all.
fn started_within_tries<T>(mut start: impl FnMut() -> Result<T, NotReady>) -> std::io::Result<T> {
    let mut tries = 0;
    loop {
        tries += 1;
        match start() {
            Ok(started) => return Ok(started),
            Err(NotReady::Exited(_)) if tries < START_TRIES => {}
            Err(e) => return Err(e.into_error()),
        }
    }
}

impl LocalNats {
    /// A single JetStream server storing under `dir`.
    pub fn start(dir: &Path) -> std::io::Result<Self> {
        Self::single(dir, Vec::new())
    }

    /// A single server as [`start`](Self::start) that takes messages of at most `bytes`
    /// (its `max_payload`, 1 MB by default), as an operator may set it.
    pub fn start_with_max_payload(dir: &Path, bytes: usize) -> std::io::Result<Self> {
        std::fs::create_dir_all(dir)?;
        let conf = dir.join("max-payload.conf");
        std::fs::write(&conf, format!("max_payload: {bytes}\n"))?;
        Self::single(dir, vec!["-c".into(), conf.display().to_string()])
    }

    fn single(dir: &Path, config: Vec<String>) -> std::io::Result<Self> {
        started_within_tries(|| {
            let port = free_port().map_err(NotReady::Failed)?;
            let name = unique_name("turnstile");
            let mut args = config.clone();
            args.extend(server_args(port, dir, &name));
            let mut server = LocalNats {
                child: None,
                args,
                port,
                name,
                cluster: None,
            };
            server.start_process()?;
            Ok(server)
        })
    }

    /// A cluster of `nodes` JetStream servers, node `i` named `node<i>` and storing under
    /// `dir/node<i>`.
    pub fn cluster(nodes: usize, dir: &Path) -> std::io::Result<Vec<Self>> {
        started_within_tries(|| Self::try_cluster(nodes, dir))
    }

    fn try_cluster(nodes: usize, dir: &Path) -> Result<Vec<Self>, NotReady> {
        let ports: Vec<(u16, u16)> = (0..nodes)
            .map(|_| Ok((free_port()?, free_port()?)))
            .collect::<std::io::Result<_>>()
            .map_err(NotReady::Failed)?;
        let routes: Vec<String> = ports
            .iter()
            .map(|(_, cluster)| format!("nats://127.0.0.1:{cluster}"))
            .collect();
        let cluster_name = unique_name("turnstile-cluster");
        let mut servers = Vec::new();
        for (i, (port, cluster)) in ports.iter().enumerate() {
            let store = dir.join(format!("node{i}"));
            std::fs::create_dir_all(&store).map_err(NotReady::Failed)?;
            let name = format!("node{i}");
            let mut args = server_args(*port, &store, &name);
            args.extend([
                "--cluster_name".into(),
                cluster_name.clone(),
                "--cluster".into(),
                format!("nats://127.0.0.1:{cluster}"),
                "--routes".into(),
                routes.join(","),
            ]);
            let mut server = LocalNats {
                child: None,
                args,
                port: *port,
                name,
                cluster: Some(cluster_name.clone()),
            };
            // Those started so far are killed when `servers` is dropped.
            server.start_process()?;
            servers.push(server);
        }
        Ok(servers)
    }

    /// Starts the process and waits until it answers as itself.
    fn start_process(&mut self) -> Result<(), NotReady> {
        let child = Command::new(server_binary())
            .args(&self.args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(NotReady::Failed)?;
        self.child = Some(child);
        let deadline = Instant::now() + READY_WAIT;
        loop {
            if let Some(child) = self.child.as_mut()
                && let Ok(Some(status)) = child.try_wait()
            {
                self.child = None;
                return Err(NotReady::Exited(std::io::Error::other(format!(
                    "nats-server {} exited ({status}) before answering on 127.0.0.1:{}",
                    self.name, self.port
                ))));
            }
            if self.answers_as_itself() {
                return Ok(());
            }
            if Instant::now() > deadline {
                self.kill();
                return Err(NotReady::Failed(std::io::Error::other(format!(
                    "nats-server {} did not answer on 127.0.0.1:{} within {} s",
                    self.name,
                    self.port,
                    READY_WAIT.as_secs()
                ))));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Whether a connection to the port gets an `INFO` line naming this server.
    fn answers_as_itself(&self) -> bool {
        self.info().is_some_and(|info| {
            info["server_name"] == self.name.as_str()
                && (self.cluster.as_ref()).is_none_or(|cluster| info["cluster"] == cluster.as_str())
        })
    }

    /// The `INFO` a new connection to the port gets, if it gets one.
    fn info(&self) -> Option<serde_json::Value> {
        let stream = TcpStream::connect(("127.0.0.1", self.port)).ok()?;
        stream
            .set_read_timeout(Some(Duration::from_millis(500)))
            .ok()?;
        // An INFO line is a few hundred bytes; a peer that sends more without one is not a server.
        let mut line = Vec::new();
        BufReader::new(std::io::Read::take(stream, 4096))
            .read_until(b'\n', &mut line)
            .ok()?;
        serde_json::from_slice(line.strip_prefix(b"INFO ")?.trim_ascii()).ok()
    }

    /// `nats://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// The server's process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// SIGKILLs the server (its data stays for a restart).
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the server again on the same port and directory.
    pub fn restart(&mut self) -> std::io::Result<()> {
        self.kill();
        self.start_process().map_err(NotReady::into_error)
    }
}

impl Drop for LocalNats {
    fn drop(&mut self) {
        self.kill();
    }
}
