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

use turnstile_journal::reader::{ReadMode, check_line};
use turnstile_journal::{LiveMark, all_event_types};

use super::fields::{Fields, Kind, Span, Store};
use super::{json, utf8};

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

/// An event type: an index in the schema's table, or a name stored with the chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TypeRef {
    Known(u16),
    Unknown(Span),
}

/// The schema's type names (sorted) with their ephemeral flag.
pub(crate) fn known_types() -> &'static [(&'static str, bool)] {
    static TABLE: OnceLock<Vec<(&'static str, bool)>> = OnceLock::new();
    TABLE.get_or_init(|| {
        // The effective policy: the rewind marker is the one schema-ephemeral type on disk.
        let mut table: Vec<(&'static str, bool)> = all_event_types()
            .map(|(name, _)| {
                let p = turnstile_journal::persistence_of(name);
                (name, p == turnstile_journal::Persistence::Ephemeral)
            })
            .collect();
        table.sort_by(|a, b| a.0.cmp(b.0));
        table
    })
}

fn lookup(name: &[u8]) -> Option<u16> {
    known_types()
        .binary_search_by(|(n, _)| n.as_bytes().cmp(name))
        .ok()
        .and_then(|i| u16::try_from(i).ok())
}

/// A type name as a [`TypeRef`] and whether it is ephemeral.
pub(crate) fn type_ref(name: &str, store: &mut Store) -> (TypeRef, bool) {
    match lookup(name.as_bytes()) {
        Some(i) => (TypeRef::Known(i), known_types()[usize::from(i)].1),
        None => (TypeRef::Unknown(store.push(name)), false),
    }
}

/// The name of a [`TypeRef`].
pub(crate) fn type_name(t: TypeRef, store: &Store) -> &str {
    match t {
        TypeRef::Known(i) => known_types().get(usize::from(i)).map_or("", |e| e.0),
        TypeRef::Unknown(span) => store.get(span),
    }
}

/// Scratch space reused across lines.
#[derive(Debug, Default)]
pub(crate) struct Scratch {
    pub(crate) stack: Vec<u8>,
    /// For values nested in `data` (tool requests), parsed while `stack` is in use.
    pub(crate) inner: Vec<u8>,
    /// Recently seen schema types with a fingerprint: a journal uses a dozen or two, so a short
    /// scan comparing one integer each beats a binary search over all 149 names.
    types: Vec<CachedType>,
}

/// A cached type: fingerprint, name, index in the schema table, ephemeral flag, kind.
type CachedType = (u64, Box<[u8]>, u16, bool, Kind);

/// Length and last eight bytes of a name: tells the schema's type names apart in one compare.
fn fingerprint(name: &[u8]) -> u64 {
    let mut last = [0u8; 8];
    let n = name.len().min(8);
    last[..n].copy_from_slice(&name[name.len() - n..]);
    u64::from_le_bytes(last) ^ ((name.len() as u64) << 56)
}

impl Scratch {
    /// Type, ephemeral flag and kind of a type name.
    pub(crate) fn classify(
        &mut self,
        name: &[u8],
        store: &mut Store,
    ) -> Option<(TypeRef, bool, Kind)> {
        let fp = fingerprint(name);
        if let Some((_, _, i, ephemeral, kind)) =
            self.types.iter().find(|t| t.0 == fp && *t.1 == *name)
        {
            // Only plain schema names enter the cache, so a hit needs no further check.
            return Some((TypeRef::Known(*i), *ephemeral, *kind));
        }
        // A name the fast path can take as is: plain ASCII, no character JSON would escape.
        if name.is_empty()
            || !name
                .iter()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-'))
        {
            return None;
        }
        let name = std::str::from_utf8(name).ok()?;
        let kind = Kind::of(name);
        let (type_ref, ephemeral) = type_ref(name, store);
        if let TypeRef::Known(i) = type_ref
            && self.types.len() < 64
        {
            self.types
                .push((fp, name.as_bytes().into(), i, ephemeral, kind));
        }
        Some((type_ref, ephemeral, kind))
    }
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

/// The fixed head of a standard-layout line, before its type name.
pub(crate) const HEAD: &[u8] = b"{\"type\":\"";
const DATA_KEY: &[u8] = b",\"data\":";
const ID_KEY: &[u8; 7] = b",\"id\":\"";
const TIMESTAMP_KEY: &[u8; 15] = b"\",\"timestamp\":\"";
const PARENT_KEY: &[u8; 13] = b"\",\"parentId\":";

/// The type name at the head of a line in the standard layout, if it is a plain name.
pub(crate) fn head_type(line: &[u8]) -> Option<&[u8]> {
    let rest = line.strip_prefix(HEAD)?;
    // Type names are short: a plain loop beats a memchr call here.
    let end = rest.iter().position(|&c| c == b'"' || c == b'\\')?;
    // A backslash would make the JSON string differ from its bytes: leave it to the slow path.
    (rest[end] == b'"').then_some(&rest[..end])
}

/// A line's envelope in the standard layout: type name, `data` bytes, id, parent id.
pub(crate) type Envelope<'a> = (&'a [u8], &'a [u8], u128, Option<u128>);

/// The envelope of a line in the standard layout (its `data` not yet checked); `None` for any
/// other layout.
pub(crate) fn standard_envelope(line: &[u8]) -> Option<Envelope<'_>> {
    let (name, data, tail) = standard_layout(line)?;
    let (id, parent) = tail_values(line, tail)?;
    Some((name, data, id, parent))
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

/// Checks the fixed tail `,"id":"…","timestamp":"…","parentId":…}`; returns where it starts,
/// the id and the parent id.
fn tail(line: &[u8]) -> Option<(usize, u128, Option<u128>)> {
    let tail = tail_layout(line)?;
    let (id, parent) = tail_values(line, tail)?;
    Some((tail.start, id, parent))
}

/// Where the fixed tail of a standard-layout line is (its keys checked, not its values).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Tail {
    /// Where it starts.
    start: usize,
    /// The parent id is `null` (else a quoted uuid).
    null_parent: bool,
}

/// Bytes of the fixed part of the tail: `,"id":"<36>","timestamp":"<24>","parentId":`.
const FIXED: usize = 7 + 36 + 15 + 24 + 13;

/// The fixed tail's place, when its keys and quotes are where the standard layout has them.
fn tail_layout(line: &[u8]) -> Option<Tail> {
    let n = line.len();
    let (parent_len, null_parent) = if line.ends_with(b"null}") {
        (4, true)
    } else if line.ends_with(b"\"}") {
        // `"` + 36 + `"` before the closing brace.
        if *line.get(n.checked_sub(39)?)? != b'"' {
            return None;
        }
        (38, false)
    } else {
        return None;
    };
    let start = n.checked_sub(1 + parent_len + FIXED)?;
    let t: &[u8; FIXED] = line.get(start..start + FIXED)?.try_into().ok()?;
    if t[..7] != *ID_KEY || t[43..58] != *TIMESTAMP_KEY || t[82..95] != *PARENT_KEY {
        return None;
    }
    Some(Tail { start, null_parent })
}

/// The id and parent id of the tail at `tail` (found by [`standard_layout`] in this `line`),
/// when they are uuids and the timestamp is canonical: the rest of [`standard_envelope`]'s
/// check.
pub(crate) fn tail_values(line: &[u8], tail: Tail) -> Option<(u128, Option<u128>)> {
    let t: &[u8; FIXED] = line.get(tail.start..tail.start + FIXED)?.try_into().ok()?;
    let id = parse_uuid(&t[7..43])?;
    if !turnstile_journal::Timestamp::is_canonical(&t[58..82]) {
        return None;
    }
    let parent = if tail.null_parent {
        None
    } else {
        let at = tail.start + FIXED + 1;
        Some(parse_uuid(line.get(at..at + 36)?)?)
    };
    Some((id, parent))
}

/// The type name and `data` of a line in the standard layout, and its tail, whose values
/// [`tail_values`] checks: together, [`standard_envelope`] in two steps.
pub(crate) fn standard_layout(line: &[u8]) -> Option<(&[u8], &[u8], Tail)> {
    let name = head_type(line)?;
    let data_start = HEAD.len() + name.len() + 1 + DATA_KEY.len();
    if line.get(HEAD.len() + name.len() + 1..data_start)? != DATA_KEY {
        return None;
    }
    let tail = tail_layout(line)?;
    let data = line.get(data_start..tail.start)?;
    Some((name, data, tail))
}

/// The `id` of a line in the standard layout, read from its fixed tail alone.
pub(crate) fn tail_id(line: &[u8]) -> Option<u128> {
    tail(line).map(|(_, id, _)| id)
}

/// Eight ASCII hex digits (in text order, big-endian in `x`) to their value; `None` if any
/// is not a hex digit.
///
/// SWAR: every byte is checked to be in `0-9`, `A-F` or `a-f` with per-byte additions that
/// set the high bit exactly when a bound is passed (all bytes are first checked to be ASCII, so
/// no addition carries into the next byte), then the nibbles are packed pairwise.
#[inline(always)]
fn hex8(x: u64) -> Option<u64> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = ONES * 0x80;
    if x & HIGH != 0 {
        return None;
    }
    let digit = (x + ONES * (0x80 - 0x30)) & !(x + ONES * (0x7F - 0x39));
    let lower = x | (ONES * 0x20);
    let letter = (lower + ONES * (0x80 - 0x61)) & !(lower + ONES * (0x7F - 0x66));
    if (digit | letter) & HIGH != HIGH {
        return None;
    }
    // '0'-'9' -> 0-9; 'A'-'F'/'a'-'f' have bit 6 set and low nibble 1-6 -> 10-15.
    let v = (x & (ONES * 0x0F)) + ((x >> 6) & ONES) * 9;
    let v = (v | (v >> 4)) & 0x00FF_00FF_00FF_00FF;
    let v = (v | (v >> 8)) & 0x0000_FFFF_0000_FFFF;
    Some((v | (v >> 16)) & 0x0000_0000_FFFF_FFFF)
}

/// Parses the hyphenated form `8-4-4-4-12` (any hex case), as `Uuid::parse_str` accepts it.
pub(crate) fn parse_uuid(b: &[u8]) -> Option<u128> {
    let b: &[u8; 36] = b.try_into().ok()?;
    if b[8] != b'-' || b[13] != b'-' || b[18] != b'-' || b[23] != b'-' {
        return None;
    }
    let be64 = |at: usize| {
        u64::from_be_bytes([
            b[at],
            b[at + 1],
            b[at + 2],
            b[at + 3],
            b[at + 4],
            b[at + 5],
            b[at + 6],
            b[at + 7],
        ])
    };
    let be32 = |at: usize| u64::from(u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]));
    // The 32 digits as four groups of eight: 0-7, 9-12 + 14-17, 19-22 + 24-27, 28-35.
    let g1 = hex8(be64(0))?;
    let g2 = hex8((be32(9) << 32) | be32(14))?;
    let g3 = hex8((be32(19) << 32) | be32(24))?;
    let g4 = hex8(be64(28))?;
    Some((u128::from(g1) << 96) | (u128::from(g2) << 64) | (u128::from(g3) << 32) | u128::from(g4))
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
