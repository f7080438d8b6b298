//! `session.snapshot_rewind`: the conversation returned to before an event. The runtime sends
//! it live after cutting its journal file; turnstile persists it as the rewind marker (see
//! [`crate::REWIND_MARKER`]) and the fold drops the events it names.

use serde::{Deserialize, Serialize};

use super::payload;

/// `session.snapshot_rewind`: `upToEventId` and every later event left the conversation.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SnapshotRewind {
    /// The first event removed (the runtime's "rewound to"): it and all after it are gone.
    pub up_to_event_id: String,
    /// Persisted events removed: the last `eventsRemoved` events of the view before the
    /// marker (earlier markers and what they removed not counted).
    pub events_removed: u64,
}
payload!(SnapshotRewind, "session.snapshot_rewind");
