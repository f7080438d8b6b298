//! One client connection: a reader that turns frames into calls, a writer task that owns the
//! output stream, and the [`Peer`] handle through which sessions notify and call the client.
//!
//! Requests are handled concurrently (each in its own task; a panic in one becomes an internal
//! error response). Everything written goes through one queue, so notifications of a session
//! keep their order. When the stream ends the connection tears down in an order that never
//! waits on the gone client: calls to the client fail first, running handlers finish, the
//! sessions this client opened are aborted and closed (journal durable, lock released), and
//! the writer flushes what is queued.

use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncWrite, BufReader};
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::dispatch;
use crate::framing::{Frame, FrameError, FrameReader, write_frame};
use crate::peer::Peer;
use crate::rpc::{self, Incoming, RpcError};
use crate::server::Server;

/// Serves one client until its stream ends, the server shuts down or writing fails.
pub(crate) async fn serve<R, W>(server: Server, input: R, output: W, needs_token: bool)
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (out_tx, out_rx) = mpsc::unbounded_channel();
    let authorized = !needs_token || server.config().connection_token.is_none();
    let peer = Arc::new(Peer::new(server.next_connection_id(), out_tx, authorized));
    let finish = CancellationToken::new();
    let writer = tokio::spawn(write_loop(
        out_rx,
        output,
        Arc::clone(&peer),
        finish.clone(),
    ));
    server.add_peer(Arc::clone(&peer));
    tracing::info!(connection = peer.id(), "client connected");

    let mut frames = FrameReader::new(BufReader::new(input), server.config().max_frame_bytes);
    let mut handlers = JoinSet::new();
    let shutdown = server.shutdown_token();
    loop {
        let frame = tokio::select! {
            _ = shutdown.cancelled() => break,
            _ = peer.closed() => break,
            frame = frames.next_frame() => frame,
        };
        match frame {
            Ok(None) => {
                tracing::info!(connection = peer.id(), "client closed the stream");
                break;
            }
            Ok(Some(Frame::Body(body))) => incoming(&server, &peer, &body, &mut handlers),
            Ok(Some(Frame::Oversized { declared, limit })) => {
                tracing::warn!(
                    connection = peer.id(),
                    declared,
                    limit,
                    "oversized frame refused"
                );
                peer.send(rpc::error_response(
                    &rpc::RequestId::null(),
                    &RpcError::invalid_request(format!(
                        "frame of {declared} bytes exceeds the limit of {limit} bytes; it was skipped"
                    )),
                ));
            }
            Ok(Some(Frame::BadHeader(reason))) => {
                tracing::warn!(connection = peer.id(), %reason, "bad frame header");
                peer.send(rpc::error_response(
                    &rpc::RequestId::null(),
                    &RpcError::parse(reason),
                ));
            }
            Err(e @ (FrameError::Truncated { .. } | FrameError::TruncatedHeader)) => {
                tracing::warn!(connection = peer.id(), error = %e, "client stream ended mid-frame");
                peer.send(rpc::error_response(
                    &rpc::RequestId::null(),
                    &RpcError::parse(e.to_string()),
                ));
                break;
            }
            Err(FrameError::Io(e)) => {
                tracing::warn!(connection = peer.id(), error = %e, "reading from the client failed");
                break;
            }
        }
        // Reap finished handlers so the set does not grow with the connection's lifetime.
        while handlers.try_join_next().is_some() {}
    }

    // Teardown: nothing may wait on the client from here on.
    peer.close();
    while handlers.join_next().await.is_some() {}
    server.connection_closed(&peer).await;
    finish.cancel();
    let _ = writer.await;
    tracing::info!(connection = peer.id(), "connection closed");
}

/// Routes one frame body.
fn incoming(server: &Server, peer: &Arc<Peer>, body: &[u8], handlers: &mut JoinSet<()>) {
    match rpc::parse_incoming(body) {
        Err(rejected) => {
            tracing::warn!(connection = peer.id(), error = %rejected.error, "unusable message");
            peer.send(rpc::error_response(&rejected.id, &rejected.error));
        }
        Ok(Incoming::Response { id, outcome }) => peer.answer(&id, outcome),
        Ok(Incoming::Notification { method, .. }) => {
            // No client notification means anything to this server; there is nobody to tell.
            tracing::debug!(connection = peer.id(), %method, "client notification ignored");
        }
        Ok(Incoming::Request { id, method, params }) => {
            let server = server.clone();
            let peer = Arc::clone(peer);
            handlers.spawn(async move {
                let call = {
                    let (server, peer, method) = (server.clone(), Arc::clone(&peer), method.clone());
                    tokio::spawn(async move { dispatch::call(&server, &peer, &method, params).await })
                };
                let body = match call.await {
                    Ok(Ok(result)) => rpc::response(&id, &result),
                    Ok(Err(error)) => {
                        tracing::debug!(connection = peer.id(), %method, %error, "request failed");
                        rpc::error_response(&id, &error)
                    }
                    Err(join) => {
                        tracing::error!(connection = peer.id(), %method, error = %join, "handler crashed");
                        rpc::error_response(
                            &id,
                            &RpcError::internal(format!("internal error while handling {method}")),
                        )
                    }
                };
                peer.send(body);
            });
        }
    }
}

/// Writes queued bodies until told to finish, then flushes what is left.
async fn write_loop<W: AsyncWrite + Unpin>(
    mut rx: mpsc::UnboundedReceiver<Vec<u8>>,
    mut output: W,
    peer: Arc<Peer>,
    finish: CancellationToken,
) {
    loop {
        let body = tokio::select! {
            biased;
            body = rx.recv() => body,
            _ = finish.cancelled() => {
                rx.close();
                rx.recv().await
            }
        };
        let Some(body) = body else { break };
        if let Err(e) = write_frame(&mut output, &body).await {
            tracing::warn!(connection = peer.id(), error = %e, "writing to the client failed");
            peer.close();
            return;
        }
    }
    use tokio::io::AsyncWriteExt;
    let _ = output.shutdown().await;
}
