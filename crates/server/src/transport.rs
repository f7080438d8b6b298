//! Transports: one client on stdin/stdout (`--stdio`), or any number of clients over TCP on
//! 127.0.0.1 (`--port N`), each served only once it presented the listener's connection
//! token. Either way the server ends with every session closed cleanly.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;

use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use crate::auth::ConnectionToken;
use crate::connection;
use crate::error::ServerError;
use crate::framing::write_frame;
use crate::limits::{Backoff, RateLimitedLog};
use crate::rpc::{self, RequestId, RpcError, codes};
use crate::server::Server;

/// Serves one client on this process's stdin and stdout until the client closes the stream or
/// the server shuts down, then closes every session. Logs must go to stderr.
pub async fn serve_stdio(server: &Server) {
    serve_io(server, tokio::io::stdin(), tokio::io::stdout()).await;
}

/// Serves one client over a pair of streams (stdio, a pipe, a socket), like [`serve_stdio`]:
/// whoever holds the streams is the client the server was started for, so no token is asked.
pub async fn serve_io<R, W>(server: &Server, input: R, output: W)
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    connection::serve(server.clone(), input, output, None).await;
    server.shutdown().await;
}

/// A bound TCP listener on 127.0.0.1. Any local user can connect to it, so a connection is
/// served only after `connect` with its token: there is no listener without one.
pub struct TcpServer {
    server: Server,
    listener: TcpListener,
    token: Arc<ConnectionToken>,
}

impl TcpServer {
    /// Binds 127.0.0.1:`port` (0 picks a free port); clients must present `token`.
    pub async fn bind(
        server: Server,
        port: u16,
        token: ConnectionToken,
    ) -> Result<Self, ServerError> {
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|source| ServerError::Bind {
                addr: addr.to_string(),
                source,
            })?;
        Ok(TcpServer {
            server,
            listener,
            token: Arc::new(token),
        })
    }

    /// The bound address (its port is what `CLI server listening on port N` reports).
    pub fn local_addr(&self) -> SocketAddr {
        self.listener
            .local_addr()
            .unwrap_or_else(|_| SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))
    }

    /// Accepts clients until the server shuts down, then waits for their connections to end
    /// and closes every session. At most `max_connections` are served at once; the one
    /// beyond is answered with `SERVER_BUSY` and closed. Accept errors that say descriptors or memory ran
    /// out are waited out with a growing pause, and every repeated warning is rate-limited.
    pub async fn run(self) -> Result<(), ServerError> {
        let shutdown = self.server.shutdown_token();
        let max_connections = self.server.config().max_connections.max(1);
        let slots = Arc::new(Semaphore::new(max_connections));
        let refusing = Arc::new(Semaphore::new(REFUSALS_IN_FLIGHT));
        let mut refused_log = RateLimitedLog::new(LOG_INTERVAL);
        let mut accept_log = RateLimitedLog::new(LOG_INTERVAL);
        let mut backoff = Backoff::default();
        let mut connections = JoinSet::new();
        let result = loop {
            let accepted = tokio::select! {
                _ = shutdown.cancelled() => break Ok(()),
                accepted = self.listener.accept() => accepted,
            };
            match accepted {
                Ok((stream, peer)) => {
                    backoff.reset();
                    let _ = stream.set_nodelay(true);
                    let Ok(slot) = Arc::clone(&slots).try_acquire_owned() else {
                        if let Some(more) = refused_log.admit() {
                            tracing::warn!(
                                %peer,
                                max_connections,
                                refused_since_last_warning = more,
                                "connection refused: the server is at its connection limit (--max-connections)"
                            );
                        }
                        refuse(stream, max_connections, &refusing);
                        continue;
                    };
                    tracing::debug!(%peer, "accepted a connection");
                    let (input, output) = stream.into_split();
                    let serve = connection::serve(
                        self.server.clone(),
                        input,
                        output,
                        Some(Arc::clone(&self.token)),
                    );
                    connections.spawn(async move {
                        serve.await;
                        drop(slot);
                    });
                }
                Err(e) if is_transient(&e) => {
                    let pause = if out_of_resources(&e) {
                        backoff.fail()
                    } else {
                        Duration::ZERO
                    };
                    if let Some(more) = accept_log.admit() {
                        tracing::warn!(
                            error = %e,
                            failed_since_last_warning = more,
                            pause_ms = pause.as_millis() as u64,
                            "accept failed; still listening"
                        );
                    }
                    if !pause.is_zero() {
                        tokio::select! {
                            _ = shutdown.cancelled() => break Ok(()),
                            _ = tokio::time::sleep(pause) => {}
                        }
                    }
                }
                Err(e) => break Err(ServerError::Accept(e)),
            }
            while connections.try_join_next().is_some() {}
        };
        // Connections see the shutdown token too; an accept failure ends them here.
        if result.is_err() {
            self.server.shutdown_token().cancel();
        }
        while connections.join_next().await.is_some() {}
        self.server.shutdown().await;
        result
    }
}

/// Warnings that repeat (refusals, accept errors) are logged at most this often.
const LOG_INTERVAL: Duration = Duration::from_secs(1);

/// Refused connections being answered at once; beyond that a refused connection is closed
/// without an answer, so refusing never holds more than this many descriptors.
const REFUSALS_IN_FLIGHT: usize = 16;

/// How long a refused connection is given to take its answer.
const REFUSAL_WAIT: Duration = Duration::from_secs(1);

/// Answers a connection beyond the limit with a `SERVER_BUSY` error (id `null`) and closes
/// it. The answer is written, the stream shut down and what the client had sent read and
/// dropped (closing with unread bytes would reset the connection and could discard the
/// answer before the client reads it), all within [`REFUSAL_WAIT`].
fn refuse(stream: TcpStream, max_connections: usize, refusing: &Arc<Semaphore>) {
    let Ok(permit) = Arc::clone(refusing).try_acquire_owned() else {
        return;
    };
    let body = rpc::error_response(
        &RequestId::null(),
        &RpcError::new(
            codes::SERVER_BUSY,
            format!(
                "the server is serving its limit of {max_connections} connections (--max-connections); this connection is closed, try again later"
            ),
        ),
    );
    tokio::spawn(async move {
        let mut stream = stream;
        let _ = tokio::time::timeout(REFUSAL_WAIT, async {
            write_frame(&mut stream, &body).await?;
            stream.shutdown().await?;
            let mut sink = [0u8; 4096];
            while stream.read(&mut sink).await? > 0 {}
            Ok::<(), std::io::Error>(())
        })
        .await;
        drop(permit);
    });
}

/// Accept errors that say the process or the system ran out of descriptors or memory:
/// waiting is the only thing that helps.
fn out_of_resources(e: &std::io::Error) -> bool {
    e.raw_os_error().is_some_and(|c| {
        c == libc::EMFILE || c == libc::ENFILE || c == libc::ENOBUFS || c == libc::ENOMEM
    })
}

/// Errors after which accepting can go on (a client that vanished, descriptors running out).
fn is_transient(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::*;
    matches!(
        e.kind(),
        ConnectionAborted | ConnectionReset | Interrupted | WouldBlock
    ) || out_of_resources(e)
}
