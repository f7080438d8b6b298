//! What can go wrong reading a seal or a key.

use std::io;

/// A seal or key that cannot be used; a journal that differs from its seal is not an error
/// but a [`crate::Finding`].
#[derive(Debug, thiserror::Error)]
pub enum SealError {
    /// Reading the journal, the seal or a key failed.
    #[error("{what}: {source}")]
    Io {
        /// Which input.
        what: &'static str,
        /// The OS error.
        source: io::Error,
    },
    /// A line of the seal is not a record of this format.
    #[error("seal line {line}: {message}")]
    Record {
        /// 1-based line of the seal.
        line: u64,
        /// What is wrong with it.
        message: String,
    },
    /// The seal is larger than a verification holds.
    #[error(
        "the seal is over {max} bytes; a seal is about 1/40 of its journal, so this is not one"
    )]
    TooLarge {
        /// The bound ([`crate::MAX_SEAL_BYTES`]).
        max: u64,
    },
    /// A key file does not hold a key.
    #[error("{0}")]
    Key(String),
}
