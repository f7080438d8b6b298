//! Trace and span ids derived from the session and the journal's event ids, so that exporting
//! the same session twice gives the same ids: a backend shows one trace, not two, and a link to
//! a span stays valid after a second export.
//!
//! An id is the first bytes of SHA-256 over a label, the session id and the id of the event that
//! opened the span (or the interaction, for a trace). The label keeps a trace id and a span id
//! of the same event apart. The W3C rules forbid an all-zero id; SHA-256 gives one with a
//! probability of 2^-64 at worst, and the last byte is then set to 1.

use sha2::{Digest, Sha256};

/// A trace id: 16 bytes.
pub type TraceId = [u8; 16];
/// A span id: 8 bytes.
pub type SpanId = [u8; 8];

fn digest(label: &[u8], session: &str, event: &str) -> [u8; 32] {
    let mut hash = Sha256::new();
    hash.update(label);
    hash.update([0]);
    hash.update(session.as_bytes());
    hash.update([0]);
    hash.update(event.as_bytes());
    hash.finalize().into()
}

/// The trace of the interaction opened by `event` (its prompt) in `session`.
pub fn trace_id(session: &str, event: &str) -> TraceId {
    let mut id = [0; 16];
    id.copy_from_slice(&digest(b"turnstile trace", session, event)[..16]);
    if id == [0; 16] {
        id[15] = 1;
    }
    id
}

/// The span opened by `event` in `session`.
pub fn span_id(session: &str, event: &str) -> SpanId {
    let mut id = [0; 8];
    id.copy_from_slice(&digest(b"turnstile span", session, event)[..8]);
    if id == [0; 8] {
        id[7] = 1;
    }
    id
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_inputs_give_the_same_ids_and_other_inputs_others() {
        let s = "7174eb80-abc3-4390-8427-1e599bf82254";
        let e = "b2d8a886-072a-43a4-9911-f7b54f76af75";
        assert_eq!(trace_id(s, e), trace_id(s, e));
        assert_eq!(span_id(s, e), span_id(s, e));
        assert_ne!(span_id(s, e), span_id(s, "another"));
        assert_ne!(span_id(s, e), span_id("another", e));
        assert_ne!(trace_id(s, e)[..8], span_id(s, e));
    }
}
