//! The JSON values kept in the store's KV buckets.

use serde::{Deserialize, Serialize};
use turnstile_journal::ending::Ending;
use turnstile_journal::{SessionSummary, Uuid};

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

/// A session's entry in the index bucket: the summary `sessions` lists and, from builds that
/// record it, how the journal ended and its last model (`Ending`), read off the working copy
/// when the writer records the session. Laid out as the summary's JSON with one more key, so
/// that earlier builds (which read the summary and ignore other keys) read it, and an entry
/// they wrote (no `ending`) is read here with none.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IndexValue {
    /// The session id.
    pub id: Option<Uuid>,
    /// Working directory from `session.start`.
    pub cwd: Option<String>,
    /// Timestamp of the first event.
    pub created: Option<String>,
    /// Timestamp of the last complete event.
    pub updated: Option<String>,
    /// Number of complete lines.
    pub events: u64,
    /// Size of the journal in bytes.
    pub size: u64,
    /// The first user prompt, shortened.
    pub first_prompt: Option<String>,
    /// How the journal ended and its model; `None` in entries of earlier builds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ending: Option<Ending>,
}

impl IndexValue {
    /// The entry of `summary` and `ending`.
    pub fn new(summary: SessionSummary, ending: Option<Ending>) -> Self {
        let SessionSummary {
            id,
            cwd,
            created,
            updated,
            events,
            size,
            first_prompt,
        } = summary;
        IndexValue {
            id,
            cwd,
            created,
            updated,
            events,
            size,
            first_prompt,
            ending,
        }
    }

    /// The summary and the ending, apart.
    pub fn split(self) -> (SessionSummary, Option<Ending>) {
        (
            SessionSummary {
                id: self.id,
                cwd: self.cwd,
                created: self.created,
                updated: self.updated,
                events: self.events,
                size: self.size,
                first_prompt: self.first_prompt,
            },
            self.ending,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary() -> SessionSummary {
        SessionSummary {
            id: Some(Uuid::from_u128(9)),
            cwd: Some("/work".into()),
            created: Some("2026-12-01T00:00:00.000Z".into()),
            updated: None,
            events: 3,
            size: 400,
            first_prompt: Some("hi".into()),
        }
    }

    #[test]
    fn an_entry_without_an_ending_is_the_summary_as_earlier_builds_wrote_it() {
        let plain = serde_json::to_vec(&summary()).unwrap();
        assert_eq!(
            serde_json::to_vec(&IndexValue::new(summary(), None)).unwrap(),
            plain
        );
        let read: IndexValue = serde_json::from_slice(&plain).unwrap();
        assert_eq!(read.split(), (summary(), None));
    }

    #[test]
    fn an_entry_with_an_ending_reads_back_and_earlier_builds_still_read_its_summary() {
        let ending = Ending {
            shut_down: true,
            error_since_prompt: false,
            model: Some("gpt-4.1".into()),
        };
        let bytes = serde_json::to_vec(&IndexValue::new(summary(), Some(ending.clone()))).unwrap();
        let read: IndexValue = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(read.split(), (summary(), Some(ending)));
        let earlier: SessionSummary = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(earlier, summary());
    }
}
