//! Transports: one client on stdin/stdout (`--stdio`), or any number of clients over TCP on
//! 127.0.0.1 (`--port N`), each served only once it presented the listener's connection
//! token. Either way the server ends with every session closed cleanly.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio::task::JoinSet;

use crate::auth::ConnectionToken;
use crate::connection;
use crate::error::ServerError;
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
    /// and closes every session.
    pub async fn run(self) -> Result<(), ServerError> {
        let shutdown = self.server.shutdown_token();
        let mut connections = JoinSet::new();
        let result = loop {
            let accepted = tokio::select! {
                _ = shutdown.cancelled() => break Ok(()),
                accepted = self.listener.accept() => accepted,
            };
            match accepted {
                Ok((stream, peer)) => {
                    tracing::debug!(%peer, "accepted a connection");
                    let _ = stream.set_nodelay(true);
                    let (input, output) = stream.into_split();
                    connections.spawn(connection::serve(
                        self.server.clone(),
                        input,
                        output,
                        Some(Arc::clone(&self.token)),
                    ));
                }
                Err(e) if is_transient(&e) => {
                    tracing::warn!(error = %e, "accept failed; still listening");
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

/// Errors after which accepting can go on (a client that vanished, descriptors running out).
fn is_transient(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::*;
    matches!(
        e.kind(),
        ConnectionAborted | ConnectionReset | Interrupted | WouldBlock
    ) || e.raw_os_error().is_some_and(|c| c == 24 || c == 23)
}
