//! Handing a session over to another process. The process holding a session's writer lock
//! listens, while it holds it, on a Unix socket in the session's directory
//! (`handover.sock`). A process that wants the session (a `session.resume` that found the
//! lock held) connects and asks `take <ms>\n`; the holder answers `released\n` once the
//! session is idle and closed (`session.shutdown` recorded, journal durable, lock released,
//! its clients told by that event and by "Session not found" afterwards), or `busy\n` when
//! it stayed busy for the time asked. The flock stays the truth: the holder releases it
//! before it answers, the taker acquires it after, so there is never a moment with two
//! writers; a taker that lost a race simply finds the lock held and is refused.

use std::path::{Path, PathBuf};
use std::sync::Weak;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio_util::sync::CancellationToken;

use crate::server::Server;
use crate::sessions::OpenSession;

/// The socket's file name in the session directory.
pub(crate) const SOCKET: &str = "handover.sock";

/// Longest wait a taker may ask for.
const MAX_WAIT: Duration = Duration::from_secs(300);

/// Longest request line read from a taker.
const MAX_REQUEST: usize = 64;

/// What the holder answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Answer {
    /// The session is closed and its lock released.
    Released,
    /// It stayed busy for the whole wait.
    Busy,
    /// The connection ended with no answer: the holder died while asked (a killed process
    /// accepts on its socket, and keeps its lock, until it is gone).
    Vanished,
}

/// The socket of the session in `dir`.
pub(crate) fn socket_path(dir: &Path) -> PathBuf {
    dir.join(SOCKET)
}

/// Longest path a socket address holds (`sun_path` is 108 bytes, one for the final NUL).
const MAX_ADDRESS: usize = 107;

/// How to address the socket in `dir`: the path itself when it fits a socket address, else
/// the same file through the directory's descriptor, which the caller keeps open while it
/// binds or connects.
struct Address {
    path: PathBuf,
    _dir: Option<std::fs::File>,
}

impl Address {
    fn of(dir: &Path) -> std::io::Result<Address> {
        use std::os::unix::ffi::OsStrExt;
        use std::os::unix::io::AsRawFd;
        let path = socket_path(dir);
        if path.as_os_str().as_bytes().len() <= MAX_ADDRESS || !cfg!(target_os = "linux") {
            return Ok(Address { path, _dir: None });
        }
        let handle = std::fs::File::open(dir)?;
        let path = PathBuf::from(format!("/proc/self/fd/{}/{SOCKET}", handle.as_raw_fd()));
        Ok(Address {
            path,
            _dir: Some(handle),
        })
    }
}

/// Listens for takers of `session` until `stop` is cancelled; the socket file is removed
/// when listening ends. A socket that cannot be bound (path too long, a read-only directory)
/// only means no handover: a taker is then refused as before.
pub(crate) fn listen(
    server: Server,
    session: Weak<OpenSession>,
    dir: PathBuf,
    stop: CancellationToken,
) {
    let path = socket_path(&dir);
    // A socket left by a process that died is stale: nobody answers on it.
    let _ = std::fs::remove_file(&path);
    let bound = Address::of(&dir).and_then(|address| UnixListener::bind(&address.path));
    let listener = match bound {
        Ok(listener) => listener,
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "no handover socket; other processes cannot take this session over");
            return;
        }
    };
    // The socket file this listener owns: a later holder in this process (the session
    // reopened) binds its own at the same path, which this one must not remove.
    let ours = socket_identity(&path);
    tokio::spawn(async move {
        loop {
            let accepted = tokio::select! {
                _ = stop.cancelled() => break,
                accepted = listener.accept() => accepted,
            };
            let Ok((stream, _)) = accepted else { continue };
            let Some(open) = session.upgrade() else { break };
            let server = server.clone();
            let stop = stop.clone();
            tokio::spawn(async move { serve_taker(server, open, stream, stop).await });
        }
        if ours.is_some() && socket_identity(&path) == ours {
            let _ = std::fs::remove_file(&path);
        }
    });
}

/// Device and inode of the file at `path`.
fn socket_identity(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(path)
        .ok()
        .map(|m| (m.dev(), m.ino()))
}

async fn serve_taker(
    server: Server,
    session: std::sync::Arc<OpenSession>,
    stream: UnixStream,
    stop: CancellationToken,
) {
    let (read, mut write) = stream.into_split();
    let mut line = String::new();
    let mut reader = BufReader::new(read).take(MAX_REQUEST as u64);
    if reader.read_line(&mut line).await.is_err() {
        return;
    }
    let Some(wait) = line
        .trim()
        .strip_prefix("take ")
        .and_then(|ms| ms.parse::<u64>().ok())
        .map(|ms| Duration::from_millis(ms).min(MAX_WAIT))
    else {
        let _ = write.write_all(b"error: expected `take <ms>`\n").await;
        return;
    };
    let deadline = tokio::time::Instant::now() + wait;
    let mut appended = session.appended();
    loop {
        appended.borrow_and_update();
        if session.is_closing() || !session.handle().is_busy() {
            break;
        }
        tokio::select! {
            _ = appended.changed() => {}
            // The busy flag may clear just after the last event: look again now and then.
            _ = tokio::time::sleep(Duration::from_millis(50)) => {}
            _ = session.wait_closed() => break,
            _ = tokio::time::sleep_until(deadline) => {
                let _ = write.write_all(b"busy\n").await;
                return;
            }
        }
    }
    tracing::info!(session = %session.id(), "handing the session over to another process");
    server.remember_closed(
        session.id(),
        "another process took it over (session.resume there)",
    );
    stop.cancel();
    server
        .close_session(&session, "taken over by another process")
        .await;
    // Only now, with the lock released, does the taker hear it may go.
    let _ = write.write_all(b"released\n").await;
}

/// Asks the holder of the session in `dir` to hand it over, waiting up to `wait` for it to be
/// idle; `None` when nobody listens there (the holder is not a server, or died).
pub(crate) async fn ask(dir: &Path, wait: Duration) -> Option<Answer> {
    let address = Address::of(dir).ok()?;
    let mut stream = UnixStream::connect(&address.path).await.ok()?;
    drop(address);
    let request = format!("take {}\n", wait.as_millis());
    stream.write_all(request.as_bytes()).await.ok()?;
    let mut line = String::new();
    // The holder answers within `wait` plus the time to close; the guard only bounds a holder
    // that hangs.
    let mut reader = BufReader::new(&mut stream).take(MAX_REQUEST as u64);
    let read = tokio::time::timeout(wait + Duration::from_secs(60), reader.read_line(&mut line))
        .await
        .ok()?;
    match (read, line.trim()) {
        (Ok(_), "released") => Some(Answer::Released),
        (Ok(_), "busy") => Some(Answer::Busy),
        (Ok(0), _) | (Err(_), _) => Some(Answer::Vanished),
        _ => None,
    }
}
