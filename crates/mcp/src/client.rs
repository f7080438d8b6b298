//! [`Client`]: our side of an MCP connection. Its own file because both transports hand it to
//! the handshake: the connection (`connection.rs`) for a stdio server, `http.rs` for a remote
//! one.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rmcp::ClientHandler;
use rmcp::model::ClientConfig;
use rmcp::service::{NotificationContext, RoleClient};

/// The client side of a connection: who we are, and a flag the server's
/// `notifications/tools/list_changed` raises (the session lists the tools again between turns).
#[derive(Clone)]
pub(crate) struct Client {
    info: ClientConfig,
    tools_changed: Arc<AtomicBool>,
}

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        self.info.clone()
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.tools_changed.store(true, Ordering::SeqCst);
    }
}

/// Our side of a new connection, raising `tools_changed` when the server says its tools changed.
pub(crate) fn client(tools_changed: &Arc<AtomicBool>) -> Client {
    let mut info = ClientConfig::default();
    info.client_info.name = "turnstile".into();
    info.client_info.version = env!("CARGO_PKG_VERSION").into();
    Client {
        info,
        tools_changed: Arc::clone(tools_changed),
    }
}
