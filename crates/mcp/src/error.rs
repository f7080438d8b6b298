//! The crate's errors: a configuration that cannot be used, and a server that cannot serve.

use std::path::PathBuf;
use std::time::Duration;

/// A configuration that cannot be used; names the file (or parameter) and the field.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file is not JSON.
    #[error("{origin}:{line}:{column}: not valid JSON: {message}")]
    Syntax {
        /// The file.
        origin: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What the parser said.
        message: String,
    },
    /// A field has a wrong value.
    #[error("{origin}: {field}: {message}")]
    Field {
        /// The file or parameter.
        origin: String,
        /// The field's path, e.g. `mcpServers.files.command`.
        field: String,
        /// What is wrong and what is expected.
        message: String,
    },
    /// The file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

impl ConfigError {
    pub(crate) fn at(origin: &str, field: &str, message: &str) -> Self {
        ConfigError::Field {
            origin: origin.to_owned(),
            field: field.to_owned(),
            message: message.to_owned(),
        }
    }
}

/// Why a server could not start or a call could not be answered. The texts are written for
/// the model and the user: they name the server and say what happened.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum McpError {
    /// The process could not be started.
    #[error("failed to start MCP server process {command:?}: {message}")]
    Spawn {
        /// The program.
        command: String,
        /// What the system said.
        message: String,
    },
    /// The initialize handshake or the tool listing failed.
    #[error("failed to initialize MCP client: {0}")]
    Initialize(String),
    /// The start did not finish in time.
    #[error("initialize handshake did not complete within {} ms", .0.as_millis())]
    StartTimeout(Duration),
    /// A call did not finish in time.
    #[error("the tool did not respond within {} ms", .0.as_millis())]
    CallTimeout(Duration),
    /// The server went away (exited, closed the connection) before answering.
    #[error("MCP transport closed before the tool responded (the server stopped)")]
    Closed,
    /// The server is not connected (it failed to start or was stopped).
    #[error("the server is not connected: {0}")]
    NotConnected(String),
    /// The server answered with a JSON-RPC error.
    #[error("MCP request failed: {0}")]
    Request(String),
}

/// A server named by a client that the session has no configuration for (the runtime's
/// wording follows "Cannot start MCP server "x": ").
#[derive(Debug, Clone, Copy, thiserror::Error, PartialEq, Eq)]
#[error("no configuration is registered for it")]
pub struct NotRegistered;
