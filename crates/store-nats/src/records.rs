//! The JSON values kept in the store's KV buckets.

use serde::{Deserialize, Serialize};

/// Who holds a session's lease (the value of its key in the lease bucket).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Holder {
    /// Host name of the writer.
    pub host: String,
    /// Its process id.
    pub pid: u32,
    /// A fresh id per acquisition, so a holder knows its own lease from a later one.
    pub token: String,
}

impl Holder {
    /// This process, with a fresh token.
    pub fn this_process() -> Self {
        Holder {
            host: gethostname::gethostname().to_string_lossy().into_owned(),
            pid: std::process::id(),
            token: uuid::Uuid::new_v4().to_string(),
        }
    }

    /// `host pid N` for messages.
    pub fn describe(&self) -> String {
        format!("{} pid {}", self.host, self.pid)
    }
}

/// A checkpoint: the stream sequence and the hash of the journal prefix it covers, so a
/// working copy that holds that prefix needs only the messages after it; and, when one was
/// recorded, the folded state of that prefix, which a host without a copy uses instead of
/// folding the whole journal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoreCheckpoint {
    /// Events (lines) covered.
    pub events: u64,
    /// Bytes covered.
    pub bytes: u64,
    /// Stream sequence of the last covered line.
    pub stream_seq: u64,
    /// SHA-256 (hex) of the covered bytes.
    pub sha256: String,
    /// The reader's checkpoint of exactly the covered bytes (`turnstile_replay::Checkpoint` as
    /// JSON), kept as given: the store neither reads nor checks it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub folded: Option<serde_json::Value>,
}

/// A checkpoint entry as the bucket holds it: the folded state inline when the entry fits in
/// one message, otherwise in the store's state bucket (`states.rs`), named here by its size
/// and hash so that a reader never takes a state another write has since replaced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredEntry {
    /// The entry; its `folded` is `None` when the state is kept in the state bucket.
    #[serde(flatten)]
    pub checkpoint: StoreCheckpoint,
    /// Where the folded state is kept when it did not fit inline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub folded_object: Option<FoldedObject>,
}

impl StoredEntry {
    /// Whether the entry has a folded state, inline or in the state bucket.
    pub fn has_folded_state(&self) -> bool {
        self.checkpoint.folded.is_some() || self.folded_object.is_some()
    }
}

/// A folded state kept in the state bucket under the session's id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FoldedObject {
    /// Its size in bytes (JSON).
    pub bytes: u64,
    /// SHA-256 (hex) of those bytes.
    pub sha256: String,
}
