//! A record's line read without serde when it is laid out exactly as
//! [`IndexRecord::line`] writes it (its keys in that order, no whitespace, numbers in their
//! shortest form); any other line, and any string with an escape in it, is left to serde
//! (`parse_line`), so the two never disagree: the fast path answers only where serde would
//! answer the same, which `the_fast_path_agrees_with_serde` checks on arbitrary records and
//! on damaged lines.
//!
//! Why: a listing of a million sessions reads a million records (about 420 MB); serde's
//! derived reader spent most of the index thread's time on them.

use uuid::Uuid;

use super::record::{IndexRecord, JournalId};
use crate::ending::Ending;

/// The record of `line` (with or without its `\n`); a line serde would refuse is refused
/// too, one it would read differently or that the fast path does not know is read by serde.
pub(super) fn parse_line(line: &[u8]) -> Option<IndexRecord> {
    match parse_fast(line) {
        Some(rec) => Some(rec),
        None => serde_json::from_slice(line).ok(),
    }
}

/// The record when `line` has exactly the writer's layout; `None` otherwise (not an error:
/// serde then decides).
pub(super) fn parse_fast(line: &[u8]) -> Option<IndexRecord> {
    let mut c = Cursor {
        b: line.strip_suffix(b"\n").unwrap_or(line),
        pos: 0,
    };
    c.lit(b"{\"id\":\"")?;
    let id = Uuid::try_parse_ascii(c.take(36)?).ok()?;
    c.lit(b"\",\"journal\":{\"ino\":")?;
    let ino = c.unsigned()?;
    c.lit(b",\"size\":")?;
    let size = c.unsigned()?;
    c.lit(b",\"mtime_ns\":")?;
    let mtime_ns = c.signed()?;
    c.lit(b"},\"events\":")?;
    let events = c.unsigned()?;
    c.lit(b",\"created\":")?;
    let created = c.opt_string()?;
    c.lit(b",\"updated\":")?;
    let updated = c.opt_string()?;
    c.lit(b",\"cwd\":")?;
    let cwd = c.opt_string()?;
    c.lit(b",\"firstPrompt\":")?;
    let first_prompt = c.opt_string()?;
    let ending = if c.lit(b",\"ending\":{\"shutDown\":").is_some() {
        let shut_down = c.boolean()?;
        c.lit(b",\"errorSincePrompt\":")?;
        let error_since_prompt = c.boolean()?;
        let model = if c.lit(b",\"model\":").is_some() {
            Some(c.string()?)
        } else {
            None
        };
        c.lit(b"}")?;
        Some(Ending {
            shut_down,
            error_since_prompt,
            model,
        })
    } else {
        None
    };
    c.lit(b"}")?;
    (c.pos == c.b.len()).then_some(IndexRecord {
        id,
        journal: JournalId {
            ino,
            size,
            mtime_ns,
        },
        events,
        created,
        updated,
        cwd,
        first_prompt,
        ending,
    })
}

struct Cursor<'a> {
    b: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn lit(&mut self, text: &[u8]) -> Option<()> {
        if self.b[self.pos..].starts_with(text) {
            self.pos += text.len();
            Some(())
        } else {
            None
        }
    }

    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let bytes = self.b.get(self.pos..self.pos + n)?;
        self.pos += n;
        Some(bytes)
    }

    /// Digits in their shortest form (no leading zero, as serde_json reads and writes them).
    fn unsigned(&mut self) -> Option<u64> {
        let digits = self.b[self.pos..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        let text = &self.b[self.pos..self.pos + digits];
        if digits == 0 || (digits > 1 && text[0] == b'0') {
            return None;
        }
        let mut n: u64 = 0;
        for &d in text {
            n = n.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
        }
        self.pos += digits;
        Some(n)
    }

    fn signed(&mut self) -> Option<i64> {
        if self.lit(b"-").is_some() {
            // serde_json reads `-0` as a float, which an integer field refuses.
            let n = self.unsigned().filter(|&n| n > 0)?;
            // i64::MIN's magnitude is one more than i64::MAX.
            0i64.checked_sub_unsigned(n)
        } else {
            i64::try_from(self.unsigned()?).ok()
        }
    }

    fn boolean(&mut self) -> Option<bool> {
        if self.lit(b"true").is_some() {
            Some(true)
        } else if self.lit(b"false").is_some() {
            Some(false)
        } else {
            None
        }
    }

    fn opt_string(&mut self) -> Option<Option<String>> {
        if self.lit(b"null").is_some() {
            return Some(None);
        }
        self.string().map(Some)
    }

    /// A string without escapes or control characters, as UTF-8; `None` for anything else.
    fn string(&mut self) -> Option<String> {
        self.lit(b"\"")?;
        let rest = &self.b[self.pos..];
        let end = memchr::memchr2(b'"', b'\\', rest)?;
        if rest[end] != b'"' {
            return None;
        }
        let text = &rest[..end];
        if text.iter().any(|&b| b < 0x20) {
            return None;
        }
        let text = std::str::from_utf8(text).ok()?;
        self.pos += end + 1;
        Some(text.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn text() -> impl Strategy<Value = Option<String>> {
        prop_oneof![
            Just(None),
            "[a-z0-9 /._-]{0,40}".prop_map(Some),
            any::<String>().prop_map(Some),
            "[\"\\\\\u{1}\u{2028}é«» ]{0,8}".prop_map(Some),
        ]
    }

    fn record() -> impl Strategy<Value = IndexRecord> {
        let ending = prop_oneof![
            Just(None),
            (any::<bool>(), any::<bool>(), text()).prop_map(|(s, e, model)| Some(Ending {
                shut_down: s,
                error_since_prompt: e,
                model
            })),
        ];
        (
            any::<u128>(),
            (any::<u64>(), any::<u64>(), any::<i64>(), any::<u64>()),
            (text(), text(), text(), text()),
            ending,
        )
            .prop_map(
                |(
                    id,
                    (ino, size, mtime_ns, events),
                    (created, updated, cwd, first_prompt),
                    ending,
                )| {
                    IndexRecord {
                        id: Uuid::from_u128(id),
                        journal: JournalId {
                            ino,
                            size,
                            mtime_ns,
                        },
                        events,
                        created,
                        updated,
                        cwd,
                        first_prompt,
                        ending,
                    }
                },
            )
    }

    proptest! {
        /// Every record the writer writes is read back the same by both paths; one damaged at
        /// any byte is read by the fast path only as serde reads it.
        #[test]
        fn the_fast_path_agrees_with_serde(rec in record(), at in any::<usize>(), byte in any::<u8>()) {
            let line = serde_json::to_vec(&rec).unwrap();
            let fast = parse_fast(&line);
            if let Some(fast) = &fast {
                prop_assert_eq!(fast, &rec);
            }
            prop_assert_eq!(parse_line(&line), Some(rec.clone()));
            let mut damaged = line.clone();
            let at = at % damaged.len();
            damaged[at] = byte;
            let serde = serde_json::from_slice::<IndexRecord>(&damaged).ok();
            if let Some(fast) = parse_fast(&damaged) {
                prop_assert_eq!(Some(fast), serde.clone());
            }
            prop_assert_eq!(parse_line(&damaged), serde);
        }
    }

    #[test]
    fn plain_records_take_the_fast_path() {
        let line = br#"{"id":"00000dea-75a0-4c3e-9ff1-afad88178084","journal":{"ino":16270164,"size":2905,"mtime_ns":-1796662292988759808},"events":11,"created":"2028-05-25T22:40:20.000Z","updated":null,"cwd":"/home/dev/projects/service-57","firstPrompt":"Session 881787","ending":{"shutDown":true,"errorSincePrompt":false,"model":"gpt-4.1"}}
"#;
        let fast = parse_fast(line).expect("the writer's layout");
        assert_eq!(Some(fast), serde_json::from_slice(line).ok());
        // Leading zeros, whitespace, an escape, a trailing key: left to serde.
        for other in [
            &br#"{"id":"00000dea-75a0-4c3e-9ff1-afad88178084","journal":{"ino":01,"size":2,"mtime_ns":3},"events":1,"created":null,"updated":null,"cwd":null,"firstPrompt":null}"#[..],
            br#"{"id":"00000dea-75a0-4c3e-9ff1-afad88178084", "journal":{"ino":1,"size":2,"mtime_ns":3},"events":1,"created":null,"updated":null,"cwd":null,"firstPrompt":null}"#,
            br#"{"id":"00000dea-75a0-4c3e-9ff1-afad88178084","journal":{"ino":1,"size":2,"mtime_ns":3},"events":1,"created":null,"updated":null,"cwd":"a\"b","firstPrompt":null}"#,
            br#"{"id":"00000dea-75a0-4c3e-9ff1-afad88178084","journal":{"ino":1,"size":2,"mtime_ns":3},"events":1,"created":null,"updated":null,"cwd":null,"firstPrompt":null,"x":1}"#,
        ] {
            assert_eq!(parse_fast(other), None);
        }
    }
}
