//! JSON-RPC 2.0 server speaking the Copilot SDK protocol v3, so that the official SDK clients
//! (`@github/copilot-sdk`, `github-copilot-sdk`) drive turnstile unmodified.
//!
//! The clients spawn the runtime (`turnstile --headless --stdio`, or `--port N` for TCP) and
//! talk JSON-RPC with LSP `Content-Length` framing ([`framing`]). Over TCP a client is served
//! only after `connect` with the listener's [`ConnectionToken`]. A connection
//! ([`transport`]) hands each request to its method (`dispatch`, `methods`); sessions are the
//! loop's [`turnstile_loop::SessionHandle`]s, owned by the connection that opened them, with
//! every event forwarded as a `session.event` notification in order. What a client takes over
//! (its tools, permission decisions, hooks) goes through `client_bridge`.
//!
//! When a client goes away mid-turn its sessions are aborted and closed: the journal is made
//! durable, `session.shutdown` is recorded and the lock released, so another process can
//! resume the session. A session waiting on that client's answer (a client tool, a permission)
//! is suspended: its requests stay open in the journal for the client that resumes it
//! (`continuePendingWork`), where the resume closes what it does not continue; in the others,
//! open calls are recorded as interrupted.
//!
//! The supported methods, and what is not supported, are listed in `docs/protocol.md`.

mod account;
mod auth;
mod broadcast;
mod client_bridge;
mod client_commands;
mod client_inference;
mod client_token;
mod client_tools;
mod config;
mod connection;
mod custom_agents;
mod dispatch;
mod elicitation_peers;
mod error;
mod folder_trust;
pub mod framing;
mod handover;
pub mod limits;
mod location_store;
mod mcp_session_state;
mod methods;
mod peer;
mod permission_state;
mod plan_review;
mod provider;
mod provider_registry;
pub mod remote_store;
pub mod rpc;
mod section_transform;
mod server;
mod session_mcp;
mod sessions;
mod signed_in;
pub mod transport;
mod user_input;
pub mod watchers;

pub use auth::ConnectionToken;
pub use config::{
    DEFAULT_CONNECT_TIMEOUT, DEFAULT_FRAME_BUDGET_WAIT, DEFAULT_INFLIGHT_FRAME_BYTES,
    DEFAULT_TAKEOVER_WAIT, ServerConfig,
};
pub use error::ServerError;
pub use methods::{PROTOCOL_VERSION, VERSION};
pub use server::Server;
pub use transport::{TcpServer, serve_io, serve_stdio};
/// The Copilot home's JSON-with-comments reader, now in `turnstile-home`.
pub use turnstile_home::jsonc;
/// The user's MCP configuration files (`mcp.config.*`), now in `turnstile-home`.
pub use turnstile_home::mcp_config as user_mcp_config;
