//! Starting `nats-server` processes on free loopback ports, each with JetStream in its own
//! directory: one server, or a cluster whose nodes can be killed and restarted. For tests,
//! benchmarks and trying the store out; the server binary is `$TURNSTILE_NATS_SERVER`, else
//! `nats-server` on the `PATH`, else `/usr/sbin/nats-server`.

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// One running `nats-server` (killed when dropped).
#[derive(Debug)]
pub struct LocalNats {
    child: Option<Child>,
    args: Vec<String>,
    port: u16,
}

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

    fn single(dir: &Path, mut args: Vec<String>) -> std::io::Result<Self> {
        let port = free_port()?;
        args.extend([
            "-a".into(),
            "127.0.0.1".into(),
            "-p".into(),
            port.to_string(),
            "-js".into(),
            "-sd".into(),
            dir.display().to_string(),
        ]);
        let mut server = LocalNats {
            child: None,
            args,
            port,
        };
        server.spawn()?;
        Ok(server)
    }

    /// A cluster of `nodes` JetStream servers, node `i` storing under `dir/node<i>`.
    pub fn cluster(nodes: usize, dir: &Path) -> std::io::Result<Vec<Self>> {
        let ports: Vec<(u16, u16)> = (0..nodes)
            .map(|_| Ok((free_port()?, free_port()?)))
            .collect::<std::io::Result<_>>()?;
        let routes: Vec<String> = ports
            .iter()
            .map(|(_, cluster)| format!("nats://127.0.0.1:{cluster}"))
            .collect();
        let mut servers = Vec::new();
        for (i, (port, cluster)) in ports.iter().enumerate() {
            let store = dir.join(format!("node{i}"));
            std::fs::create_dir_all(&store)?;
            let args = vec![
                "-a".into(),
                "127.0.0.1".into(),
                "-p".into(),
                port.to_string(),
                "-js".into(),
                "-sd".into(),
                store.display().to_string(),
                "-n".into(),
                format!("node{i}"),
                "--cluster_name".into(),
                "turnstile".into(),
                "--cluster".into(),
                format!("nats://127.0.0.1:{cluster}"),
                "--routes".into(),
                routes.join(","),
            ];
            let mut server = LocalNats {
                child: None,
                args,
                port: *port,
            };
            server.spawn()?;
            servers.push(server);
        }
        Ok(servers)
    }

    fn spawn(&mut self) -> std::io::Result<()> {
        let child = Command::new(server_binary())
            .args(&self.args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()?;
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(15);
        while TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            if Instant::now() > deadline {
                return Err(std::io::Error::other(format!(
                    "nats-server did not listen on 127.0.0.1:{} within 15 s",
                    self.port
                )));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
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
        self.spawn()
    }
}

impl Drop for LocalNats {
    fn drop(&mut self) {
        self.kill();
    }
}
