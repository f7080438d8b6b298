//! One journal line -> the facts the audit needs, or why the line is not an event.
//!
//! Lines written by the Copilot runtime and by turnstile have one layout:
//! `{"type":"T","data":{...},"id":"<uuid>","timestamp":"<24 chars>","parentId":null|"<uuid>"}`.
//! The fast path reads the type and the envelope at those fixed places, then validates `data`
//! (UTF-8 and JSON syntax, SIMD) while collecting the fields the invariants read. Because `data`
//! must be exactly one JSON object between the fixed head and the fixed tail, a line accepted
//! here is a valid event with exactly those five keys, so the top-level type read at the head is
//! the type; text that merely quotes a type further in never gets there. Any line in another
//! layout, or one the fast path does not accept, goes to the journal reader's own check
//! ([`turnstile_journal::reader::check_line`]), which decides validity and gives the message.

use std::sync::OnceLock;

use turnstile_journal::LiveMark;
use turnstile_journal::reader::{ReadMode, check_line};

use crate::raw::envelope::standard_envelope;
use crate::raw::fields::{Fields, Kind, Span, Store};
use crate::raw::types::{Scratch, TypeRef, type_ref};
use crate::raw::{json, utf8};

/// What one line holds.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// A valid event.
    Event(Facts),
    /// Not a valid event; the reader's reason.
    Bad(String),
    /// The last line of the file, without its newline: a torn (or still being written) tail.
    Torn,
}

/// The envelope and the invariant fields of a valid event.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Facts {
    pub(crate) type_ref: TypeRef,
    pub(crate) kind: Kind,
    /// The schema says this type is never written to disk.
    pub(crate) ephemeral_type: bool,
    /// The line carries `"ephemeral":true`.
    pub(crate) ephemeral_key: bool,
    pub(crate) id: u128,
    pub(crate) parent: Option<u128>,
    pub(crate) agent: Option<Span>,
    pub(crate) fields: Fields,
}

/// Reads one complete line (without its `\n`); `utf8_valid` says the caller already knows
/// the line is valid UTF-8.
pub(crate) fn parse_line(
    line: &[u8],
    utf8_valid: bool,
    store: &mut Store,
    scratch: &mut Scratch,
) -> Outcome {
    if line.is_empty()
        && let Some(message) = empty_line_message()
    {
        return Outcome::Bad(message.to_owned());
    }
    match fast(line, utf8_valid, store, scratch) {
        Some(facts) => Outcome::Event(facts),
        None => slow(line, store, scratch),
    }
}

/// The journal reader's verdict on an empty line, asked once: damaged journals can hold tens of
/// millions of blank lines (zero-length writes, blank blocks), each a bad line with this message.
fn empty_line_message() -> Option<&'static str> {
    static MESSAGE: OnceLock<Option<String>> = OnceLock::new();
    MESSAGE
        .get_or_init(|| check_line(b"", ReadMode::Lenient).err())
        .as_deref()
}

/// Same as [`parse_line`] without the fast path (tests compare the two).
#[cfg(test)]
pub(crate) fn parse_line_slow(line: &[u8], store: &mut Store, scratch: &mut Scratch) -> Outcome {
    slow(line, store, scratch)
}

fn fast(line: &[u8], utf8_valid: bool, store: &mut Store, scratch: &mut Scratch) -> Option<Facts> {
    let (name, data, id, parent) = standard_envelope(line)?;
    let (type_ref, ephemeral_type, kind) = scratch.classify(name, store)?;
    let mut fields = Fields::default();
    let Scratch { stack, inner, .. } = scratch;
    let ok = if kind.reads_fields() {
        json::scan_object(data, stack, &mut |k, v| {
            fields.set_raw(kind, k, v, store, inner)
        })
    } else {
        json::scan_object(data, stack, &mut |_, _| {})
    };
    if !ok || !(utf8_valid || utf8::is_valid(data)) {
        return None;
    }
    Some(Facts {
        type_ref,
        kind,
        ephemeral_type,
        ephemeral_key: false,
        id,
        parent,
        agent: None,
        fields,
    })
}

fn slow(line: &[u8], store: &mut Store, scratch: &mut Scratch) -> Outcome {
    let event = match check_line(line, ReadMode::Lenient) {
        Ok(event) => event,
        Err(message) => return Outcome::Bad(message),
    };
    let name = event.event_type.as_str();
    let kind = Kind::of(name);
    let mut fields = Fields::default();
    if kind.reads_fields() {
        let Scratch { stack, inner, .. } = scratch;
        let ok = json::scan_object(event.data.get().as_bytes(), stack, &mut |k, v| {
            fields.set_raw(kind, k, v, store, inner)
        });
        // serde accepted this `data`; the validator accepts the same syntax.
        debug_assert!(ok, "validator disagrees with serde on {}", event.data.get());
    }
    let (type_ref, ephemeral_type) = type_ref(name, store);
    Outcome::Event(Facts {
        type_ref,
        kind,
        ephemeral_type,
        ephemeral_key: event.live_mark != LiveMark::Absent,
        id: event.id.as_u128(),
        parent: event.parent_id.map(|p| p.as_u128()),
        agent: event.agent_id.as_deref().map(|a| store.push(a)),
        fields,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::raw::types::type_name;
    use crate::synth::{SynthConfig, session_bytes};
    use proptest::prelude::*;

    /// Everything a line's facts say, with spans resolved, for comparing paths.
    pub(crate) fn describe(outcome: &Outcome, store: &Store) -> String {
        match outcome {
            Outcome::Bad(_) => "bad".to_owned(),
            Outcome::Torn => "torn".to_owned(),
            Outcome::Event(f) => {
                let d = &f.fields;
                let requests: Vec<_> = d
                    .requests(store)
                    .iter()
                    .map(|(i, n)| (store.opt(*i), store.opt(*n)))
                    .collect();
                format!(
                    "{} {:?} eph={}/{} id={:x} parent={:?} agent={:?} turn={:?} inter={:?} call={:?} tool={:?} ok={:?} req={:?} perm={:?} auto={:?} sum={:?} reqs={:?}",
                    type_name(f.type_ref, store),
                    f.kind,
                    f.ephemeral_type,
                    f.ephemeral_key,
                    f.id,
                    f.parent,
                    store.opt(f.agent),
                    store.opt(d.turn_id),
                    store.opt(d.interaction_id),
                    store.opt(d.tool_call_id),
                    store.opt(d.tool_name),
                    d.success,
                    store.opt(d.request_id),
                    store.opt(d.permission_tool_call_id),
                    d.autopilot,
                    store.opt(d.summary),
                    requests
                )
            }
        }
    }

    fn both_paths(line: &[u8]) -> (String, String) {
        let mut store = Store::default();
        let fast = parse_line(line, false, &mut store, &mut Scratch::default());
        let fast = describe(&fast, &store);
        let mut store = Store::default();
        let slow = parse_line_slow(line, &mut store, &mut Scratch::default());
        (fast, describe(&slow, &store))
    }

    fn sample_lines() -> &'static [Vec<u8>] {
        static LINES: std::sync::OnceLock<Vec<Vec<u8>>> = std::sync::OnceLock::new();
        LINES.get_or_init(sample_lines_uncached)
    }

    fn sample_lines_uncached() -> Vec<Vec<u8>> {
        let config = SynthConfig {
            target_bytes: 96 * 1024,
            max_output_bytes: 2048,
            ..SynthConfig::default()
        };
        let (bytes, _) = session_bytes(&config);
        let mut lines: Vec<Vec<u8>> = bytes
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .map(<[u8]>::to_vec)
            .collect();
        for fixture in ["a2-autopilot", "c1-new-session", "r1-resumed"] {
            let path = format!(
                "{}/../../fixtures/copilot-runtime/{fixture}.events.jsonl",
                env!("CARGO_MANIFEST_DIR")
            );
            let text = std::fs::read(path).expect("fixture");
            lines.extend(
                text.split(|b| *b == b'\n')
                    .filter(|l| !l.is_empty())
                    .map(<[u8]>::to_vec),
            );
        }
        lines
    }

    #[test]
    fn fast_path_agrees_with_the_reader_on_real_lines() {
        for line in sample_lines() {
            let (fast, slow) = both_paths(line);
            assert_eq!(fast, slow, "{}", String::from_utf8_lossy(line));
            assert_ne!(fast, "bad");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]
        /// Damage a real line anywhere (flip, insert, delete bytes): both paths still agree on
        /// validity and on every fact.
        #[test]
        fn fast_path_agrees_with_the_reader_on_damaged_lines(
            pick in any::<prop::sample::Index>(),
            edits in prop::collection::vec((any::<prop::sample::Index>(), 0u8..3, prop::sample::select(vec![
                b'"', b'\\', b'{', b'}', b',', b':', b'0', b'a', b' ', 0x01, 0xC3, 0xA9, 0xFF, b'n', b'u', b'[', b']',
            ])), 1..4),
        ) {
            let lines = sample_lines();
            let mut line = lines[pick.index(lines.len())].clone();
            for (at, op, byte) in edits {
                let i = at.index(line.len() + 1);
                match op {
                    0 if i < line.len() => line[i] = byte,
                    1 => line.insert(i, byte),
                    _ if i < line.len() => { line.remove(i); }
                    _ => line.insert(i, byte),
                }
            }
            let (fast, slow) = both_paths(&line);
            prop_assert_eq!(fast, slow, "{}", String::from_utf8_lossy(&line));
        }
    }

    const TURN: &str = r#"{"type":"assistant.turn_start","data":{"turnId":"0","interactionId":"i"},"id":"6f286438-c43a-4c50-a65d-2109bff301ea","timestamp":"2026-11-29T14:34:34.843Z","parentId":"f51c96b3-620f-4672-acf0-531beda1682b"}"#;

    fn facts(line: &str) -> (Option<Facts>, Store) {
        let mut store = Store::default();
        let f = fast(line.as_bytes(), false, &mut store, &mut Scratch::default());
        (f, store)
    }

    #[test]
    fn fast_path_reads_the_runtime_layout() {
        let (f, store) = facts(TURN);
        let f = f.expect("fast path");
        assert_eq!(type_name(f.type_ref, &store), "assistant.turn_start");
        assert_eq!(f.kind, Kind::TurnStart);
        assert_eq!(store.opt(f.fields.turn_id), Some("0"));
        assert_eq!(f.id, 0x6f286438_c43a_4c50_a65d_2109bff301ea);
        assert!(f.parent.is_some());
        let first = TURN.replace(r#""f51c96b3-620f-4672-acf0-531beda1682b""#, "null");
        assert_eq!(facts(&first).0.expect("null parent").parent, None);
    }

    #[test]
    fn other_layouts_go_to_the_slow_path() {
        let reordered = r#"{"data":{"turnId":"0"},"type":"assistant.turn_start","id":"6f286438-c43a-4c50-a65d-2109bff301ea","timestamp":"2026-11-29T14:34:34.843Z","parentId":null}"#;
        assert!(facts(reordered).0.is_none());
        let mut store = Store::default();
        match parse_line(
            reordered.as_bytes(),
            false,
            &mut store,
            &mut Scratch::default(),
        ) {
            Outcome::Event(f) => assert_eq!(f.kind, Kind::TurnStart),
            other => panic!("{other:?}"),
        }
        let escaped = TURN.replace("turn_start\"", "turn\\u005fstart\"");
        assert!(facts(&escaped).0.is_none());
        let mut store = Store::default();
        match parse_line(
            escaped.as_bytes(),
            false,
            &mut store,
            &mut Scratch::default(),
        ) {
            Outcome::Event(f) => assert_eq!(type_name(f.type_ref, &store), "assistant.turn_start"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_second_type_key_is_not_a_valid_event() {
        let twice = TURN.replace(r#","id":"#, r#","type":"assistant.turn_start","id":"#);
        assert!(facts(&twice).0.is_none());
        let mut store = Store::default();
        assert!(matches!(
            parse_line(twice.as_bytes(), false, &mut store, &mut Scratch::default()),
            Outcome::Bad(_)
        ));
    }

    #[test]
    fn an_empty_line_gets_the_readers_message() {
        let mut store = Store::default();
        let quick = parse_line(b"", false, &mut store, &mut Scratch::default());
        let slow = parse_line_slow(b"", &mut store, &mut Scratch::default());
        match (quick, slow) {
            (Outcome::Bad(a), Outcome::Bad(b)) => {
                assert_eq!(a, b);
                assert!(!a.is_empty());
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn broken_data_is_bad() {
        let broken = TURN.replace(r#""turnId":"0""#, r#""turnId":"0"#);
        let mut store = Store::default();
        assert!(matches!(
            parse_line(
                broken.as_bytes(),
                false,
                &mut store,
                &mut Scratch::default()
            ),
            Outcome::Bad(_)
        ));
        let bad_utf8 = [TURN.as_bytes(), b"\xff"].concat();
        assert!(matches!(
            parse_line(&bad_utf8, false, &mut store, &mut Scratch::default()),
            Outcome::Bad(_)
        ));
    }
}
