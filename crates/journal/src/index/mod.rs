//! The session index: `turnstile-index.jsonl` beside a Copilot home's `session-state/` (in
//! any other state directory: inside it; [`index_path`]), one JSON record per session update,
//! so that listing sessions (and finding the newest) does not read every journal.
//!
//! The index is only an optimisation; the journals are the truth. A record names the journal's
//! identity when it was taken (inode, size, mtime in ns); a listing uses it only while the
//! journal still has exactly that identity, and reads the journal otherwise. A record also
//! carries how the journal ends and its model ([`crate::ending::Ending`]), so that
//! `turnstile sessions` reads no journal for a session whose record is current; a current
//! record without one (an older index) has it read from the journal's ends once and is
//! rewritten with it. Sessions without a record are found by listing the root (skipped while
//! the root has the identity its entries were last recorded with, `root.rs`), records of
//! sessions that are gone are dropped, and torn or garbled lines (a crash, a full disk) are
//! skipped.
//!
//! Writers (`JournalWriter`, at open, after the fsync of a turn end, at close) append whole
//! records with one `O_APPEND` write each, under a shared `flock` of the index file, without
//! an fsync. A listing that found anything stale, missing or superseded rewrites the index
//! compacted (temporary file + rename) under the exclusive `flock`, taking in records
//! appended meanwhile, so no writer's record is lost and writers never wait.

mod file;
mod journals;
mod listing;
mod order;
mod parse;
mod record;
mod root;

pub use file::{INDEX_FILE, append, index_path};
pub use listing::{Listing, ListingStats};
pub use record::{IndexRecord, JournalId};
