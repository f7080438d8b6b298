//! The methods, one file per group: the server itself, opening and closing sessions, working
//! with an open session, and answers to pending requests.

pub(crate) mod lifecycle;
pub(crate) mod pending;
pub(crate) mod server;
pub(crate) mod session;

use std::sync::Arc;

use turnstile_journal::Uuid;

use crate::peer::Peer;
use crate::rpc::{RpcError, codes};
use crate::server::Server;
use crate::sessions::OpenSession;

/// What a method handler works with.
pub(crate) struct Ctx<'a> {
    /// The server.
    pub server: &'a Server,
    /// The calling connection.
    pub peer: &'a Arc<Peer>,
}

/// The SDK protocol version this server speaks.
pub const PROTOCOL_VERSION: u32 = 3;

/// The server's version, reported by `connect` and `status.get`.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Parses a session id param.
pub(crate) fn session_id(text: &str) -> Result<Uuid, RpcError> {
    turnstile_journal::parse_session_id(text)
        .map_err(|_| RpcError::invalid_params(format!("sessionId {text:?} is not a UUID")))
}

/// The session `id` as opened by the calling connection, or the error saying why not.
pub(crate) fn open_session(ctx: &Ctx<'_>, id: &str) -> Result<Arc<OpenSession>, RpcError> {
    let uuid = session_id(id)?;
    match ctx.server.session(uuid) {
        Some(session) if session.is_closing() => Err(RpcError::new(
            codes::SESSION_NOT_FOUND,
            format!("session {id} is being closed; resume it with session.resume"),
        )),
        Some(session) if session.owner() == ctx.peer.id() => {
            session.touch();
            Ok(session)
        }
        Some(_) => Err(RpcError::new(
            codes::SESSION_IN_USE,
            format!("session {id} is open by another client of this server"),
        )),
        None => {
            let root = &ctx.server.config().state_root;
            let message = if root.session(uuid).events.is_file() {
                match ctx.server.closed_reason(uuid) {
                    Some(why) => format!(
                        "session {id} was closed because {why}; resume it with session.resume"
                    ),
                    None => format!(
                        "session {id} is not open on this connection; resume it with session.resume first"
                    ),
                }
            } else {
                format!("no session {id} in {}", root.dir().display())
            };
            Err(RpcError::new(codes::SESSION_NOT_FOUND, message))
        }
    }
}
