//! The methods, one file per group: the server itself, opening and closing sessions, working
//! with an open session, and answers to pending requests.

pub(crate) mod accounts;
pub(crate) mod agent;
pub(crate) mod command_builtins;
pub(crate) mod commands;
pub(crate) mod compaction_control;
pub(crate) mod context_info;
pub(crate) mod event_log;
pub(crate) mod extensions;
pub(crate) mod fork;
pub(crate) mod github_auth;
pub(crate) mod history;
pub(crate) mod instructions;
pub(crate) mod lifecycle;
pub(crate) mod listing;
pub(crate) mod llm_inference;
pub(crate) mod log;
pub(crate) mod mcp;
pub(crate) mod mcp_apps;
pub(crate) mod mcp_builtin;
pub(crate) mod mcp_config;
pub(crate) mod mcp_launch;
pub(crate) mod mcp_oauth;
pub(crate) mod mcp_resources;
pub(crate) mod mcp_sampling;
pub(crate) mod mcp_servers;
pub(crate) mod metadata;
pub(crate) mod name_auto;
pub(crate) mod open_params;
pub(crate) mod options;
pub(crate) mod pending;
pub(crate) mod permission_mode;
pub(crate) mod permissions;
pub(crate) mod plan;
pub(crate) mod plan_todos;
pub(crate) mod provider_endpoint;
pub(crate) mod queue;
pub(crate) mod reasoning_effort;
pub(crate) mod rewind;
pub(crate) mod schedule;
pub(crate) mod server;
pub(crate) mod server_gates;
pub(crate) mod session;
pub(crate) mod session_id_params;
pub(crate) mod session_services;
pub(crate) mod sessions_delete;
pub(crate) mod sessions_enrich;
pub(crate) mod sessions_open;
pub(crate) mod sessions_state;
pub(crate) mod shell;
pub(crate) mod shutdown;
pub(crate) mod skills;
pub(crate) mod suspend;
pub(crate) mod tools_list;
pub(crate) mod ui;
pub(crate) mod unsupported;
pub(crate) mod usage;
pub(crate) mod user_settings;
pub(crate) mod working_directory;
pub(crate) mod workspace_checkpoints;
pub(crate) mod workspace_diff;
pub(crate) mod workspace_paste;
pub(crate) mod workspaces;

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
    /// When the request was read from the connection (requests are read in order; their
    /// handlers run concurrently and may start in any order).
    pub received: std::time::Instant,
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

/// The open session `id`, for a call about it from any connection of this server (as in the
/// Copilot CLI, a connection need not have opened a session to act on it), or the runtime's
/// "Session not found for sessionId: <id>" with what this server knows about why.
pub(crate) fn open_session(ctx: &Ctx<'_>, id: &str) -> Result<Arc<OpenSession>, RpcError> {
    let not_found = |detail: String| {
        RpcError::new(
            codes::SESSION_NOT_FOUND,
            format!("Session not found for sessionId: {id}. {detail}"),
        )
    };
    let Ok(uuid) = turnstile_journal::parse_session_id(id) else {
        return Err(not_found("Session ids are UUIDs.".into()));
    };
    match ctx.server.session(uuid) {
        Some(session) if session.is_closing() => Err(not_found(
            "It is being closed; resume it with session.resume.".into(),
        )),
        Some(session) => {
            session.touch();
            Ok(session)
        }
        None => {
            let root = &ctx.server.config().state_root;
            let detail = if root.session(uuid).events.is_file() {
                match ctx.server.closed_reason(uuid) {
                    Some(why) => {
                        format!("It was closed because {why}; resume it with session.resume.")
                    }
                    None => {
                        "It is not open in this server; resume it with session.resume first.".into()
                    }
                }
            } else {
                format!("There is no such session in {}.", root.dir().display())
            };
            Err(not_found(detail))
        }
    }
}
