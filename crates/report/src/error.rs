//! [`ReportError`]: why no report was written.

use std::io;

/// What stopped a report; each names the file.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// The journal could not be audited or read.
    #[error("reading the journal: {0}")]
    Journal(#[from] turnstile_replay::ReplayError),
    /// The journal could not be opened.
    #[error("reading the journal: {0}")]
    Read(#[from] turnstile_journal::ReadError),
    /// The page could not be written (the caller knows where it was going).
    #[error("cannot write the report: {0}")]
    Write(#[from] io::Error),
}
