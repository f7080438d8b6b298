//! One client connection: a reader that turns frames into calls, a writer task that owns the
//! output stream, and the [`Peer`] handle through which sessions notify and call the client.
//!
//! Requests are handled concurrently (each in its own task; a panic in one becomes an internal
//! error response). Everything written goes through one queue, so notifications of a session
//! keep their order. When the stream ends the connection tears down in an order that never
//! waits on the gone client: calls to the client fail first, running handlers finish, the
//! sessions this client opened are aborted and closed (journal durable, lock released), and
//! the writer flushes what is queued.
//!
//! A connection that must present a connection token (TCP) is served nothing but `connect`
//! until it has: before that its frames are small (at most [`BUDGET_FREE_BODY`], so it never
//! holds any of the server's frame budget), each is answered before the next is read, and
//! after [`MAX_REFUSALS_BEFORE_AUTHENTICATION`] refused frames it is closed (see `auth`); one
//! that has not authenticated within `--connect-timeout` is closed too, so that connections
//! that send nothing cannot hold the server's connection slots.

use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncWrite, BufReader};
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::auth::{ConnectionToken, MAX_REFUSALS_BEFORE_AUTHENTICATION};
use crate::dispatch;
use crate::framing::{BUDGET_FREE_BODY, Frame, FrameError, FrameReader, write_frame};
use crate::peer::Peer;
use crate::rpc::{self, Incoming, RequestId, RpcError, codes};
use crate::server::Server;

/// Serves one client until its stream ends, the server shuts down or writing fails. With a
/// `token` (TCP), nothing but `connect` with that token is served until the client sent it.
pub(crate) async fn serve<R, W>(
    server: Server,
    input: R,
    output: W,
    token: Option<Arc<ConnectionToken>>,
) where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (out_tx, out_rx) = mpsc::unbounded_channel();
    let peer = Arc::new(Peer::new(server.next_connection_id(), out_tx, token));
    let finish = CancellationToken::new();
    let writer = tokio::spawn(write_loop(
        out_rx,
        output,
        Arc::clone(&peer),
        finish.clone(),
    ));
    server.add_peer(Arc::clone(&peer));
    tracing::info!(connection = peer.id(), "client connected");

    let max_frame = server.config().max_frame_bytes;
    let first_limit = if peer.is_authorized() {
        max_frame
    } else {
        max_frame.min(BUDGET_FREE_BODY)
    };
    let mut frames = FrameReader::new(BufReader::new(input), first_limit)
        .with_budget(server.frame_budget().clone());
    let mut handlers = JoinSet::new();
    let shutdown = server.shutdown_token();
    let mut refusals = 0;
    // A connection that has not authenticated by then is closed, whatever it is sending: one
    // that never sends a frame (or trickles a header) must not hold a connection slot.
    let connect_timeout = server.config().connect_timeout;
    let deadline = connect_timeout.map(|t| tokio::time::Instant::now() + t);
    // After `runtime.shutdown` the process's own client (stdio, no token) stays connected and
    // every request it sends is answered `SERVER_SHUTTING_DOWN`, as the Copilot CLI answers:
    // a request sent just after the shutdown's answer is never left without one.
    let mut draining = false;
    loop {
        let frame = tokio::select! {
            // A shutdown is seen before the next frame is read, so no request read after it
            // is served as if the server were not stopping.
            biased;
            _ = shutdown.cancelled(), if !draining => {
                if peer.token().is_none() && server.stop_requested() {
                    draining = true;
                    continue;
                }
                break;
            }
            _ = peer.closed() => break,
            () = sleep_until(deadline), if !peer.is_authorized() => {
                let seconds = connect_timeout.map_or(0.0, |t| t.as_secs_f64());
                tracing::info!(
                    connection = peer.id(),
                    seconds,
                    "closing a connection that did not authenticate in time (--connect-timeout)"
                );
                peer.send(rpc::error_response(
                    &rpc::RequestId::null(),
                    &RpcError::new(
                        codes::AUTHENTICATION_REQUIRED,
                        format!(
                            "AUTHENTICATION_REQUIRED: no `connect` with the token within {seconds}s (--connect-timeout); the connection is closed"
                        ),
                    ),
                ));
                break;
            }
            frame = frames.next_frame() => frame,
        };
        // Only this loop authenticates a connection, so this holds for the whole frame.
        let unauthenticated = !peer.is_authorized();
        match frame {
            Ok(None) => {
                tracing::info!(connection = peer.id(), "client closed the stream");
                break;
            }
            Ok(Some(Frame::Body(body))) if unauthenticated => {
                if authenticate(&server, &peer, &body).await {
                    frames.set_max_body(max_frame);
                    continue;
                }
            }
            Ok(Some(Frame::Body(body))) if draining => shutting_down(&peer, &body),
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
            Ok(Some(Frame::Busy { declared, budget })) => {
                tracing::warn!(
                    connection = peer.id(),
                    declared,
                    budget,
                    "no room for a frame in the server's budget; refused"
                );
                peer.send(rpc::error_response(
                    &rpc::RequestId::null(),
                    &RpcError::new(
                        codes::SERVER_BUSY,
                        format!(
                            "frame of {declared} bytes refused: the server's budget of {budget} bytes for frames being received is in use by other clients; it was skipped, send it again later"
                        ),
                    ),
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
        if unauthenticated {
            refusals += 1;
            if refusals >= MAX_REFUSALS_BEFORE_AUTHENTICATION {
                tracing::warn!(
                    connection = peer.id(),
                    refusals,
                    "closing a connection that did not authenticate"
                );
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

/// Sleeps until `deadline`; never returns without one.
async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Answers a request after `runtime.shutdown`: `-32000 SERVER_SHUTTING_DOWN`.
fn shutting_down(peer: &Arc<Peer>, body: &[u8]) {
    if let Ok(Incoming::Request { id, .. }) = rpc::parse_incoming(body) {
        peer.send(rpc::error_response(
            &id,
            &RpcError::new(codes::SERVER_SHUTTING_DOWN, "SERVER_SHUTTING_DOWN"),
        ));
    }
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
            let received = std::time::Instant::now();
            handlers.spawn(async move {
                let body = answer(&server, &peer, id, method, params, received).await;
                peer.send(body);
            });
        }
    }
}

/// Handles a frame of a connection that has not authenticated; true when it did now. The
/// frame is answered before the next one is read: only `connect` does anything here, so
/// nothing waits for long, and attempts sent together are counted one by one.
async fn authenticate(server: &Server, peer: &Arc<Peer>, body: &[u8]) -> bool {
    match rpc::parse_incoming(body) {
        Err(rejected) => {
            tracing::warn!(connection = peer.id(), error = %rejected.error, "unusable message");
            peer.send(rpc::error_response(&rejected.id, &rejected.error));
            false
        }
        Ok(Incoming::Request { id, method, params }) => {
            let body = answer(server, peer, id, method, params, std::time::Instant::now()).await;
            peer.send(body);
            peer.is_authorized()
        }
        Ok(Incoming::Response { .. } | Incoming::Notification { .. }) => {
            tracing::debug!(
                connection = peer.id(),
                "message of a connection that has not authenticated ignored"
            );
            false
        }
    }
}

/// The response to one request: its handler runs in a task of its own, so that a panic in it
/// becomes an internal error rather than the end of the connection.
async fn answer(
    server: &Server,
    peer: &Arc<Peer>,
    id: RequestId,
    method: String,
    params: serde_json::Value,
    received: std::time::Instant,
) -> Vec<u8> {
    let call = {
        let (server, peer, method) = (server.clone(), Arc::clone(peer), method.clone());
        tokio::spawn(async move { dispatch::call(&server, &peer, &method, params, received).await })
    };
    match call.await {
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
