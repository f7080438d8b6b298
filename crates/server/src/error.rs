//! Errors of the server library (as opposed to the JSON-RPC errors sent to clients).

use std::io;

/// Why the server could not serve.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The TCP listener could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: String,
        /// The OS error.
        source: io::Error,
    },
    /// Accepting a connection failed for good.
    #[error("accepting connections failed: {0}")]
    Accept(io::Error),
}
