//! The line formats of the compacted listing (`listing.rs`), one line per session, named by
//! the object's `format` metadata:
//!
//! - **1** (no `format` metadata: what the first builds wrote): `<key>\t<entry as JSON>\n`;
//! - **2**: `<key>\t<id>\t<created>\t<updated>\t<events>\t<size>\t<cwd>\t<first prompt>\n`,
//!   the entry's fields in that fixed order, read without a JSON parse (most of a large
//!   listing's time was that parse). A text field that is absent is empty; one that is
//!   present has `\` written `\\`, a tab `\t`, a line feed `\n`, and is `\0` when empty.
//! - **3** (written now): format 2 and two more fields, `\t<ending>\t<model>`: the ending
//!   empty when the entry has none, otherwise two digits (shut down, an error since the last
//!   prompt: `1` or `0`); the model a text field as above.
//!
//! A format this build does not know is refused by name, never guessed at: the listing then
//! reads the index itself, and leaves the object for the build that wrote it.

use turnstile_journal::ending::Ending;
use turnstile_journal::{SessionSummary, Uuid};

/// One listed session: its index key and its entry.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Entry {
    pub(crate) key: String,
    pub(crate) summary: SessionSummary,
    /// How its journal ended and its model, when the entry says (`IndexValue`).
    pub(crate) ending: Option<Ending>,
}

/// The format written.
pub(crate) const CURRENT: u32 = 3;

/// A line format of the object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    /// `<key>\t<entry as JSON>`.
    Json,
    /// The summary's fields in a fixed order, tab-separated.
    Fields,
    /// Those fields, the ending and the model.
    FieldsAndEnding,
}

impl Format {
    /// The format named by the object's `format` metadata (`None`: absent); an unknown one is
    /// returned as the error.
    pub(crate) fn named(name: Option<&str>) -> Result<Self, String> {
        match name {
            None | Some("1") => Ok(Format::Json),
            Some("2") => Ok(Format::Fields),
            Some("3") => Ok(Format::FieldsAndEnding),
            Some(other) => Err(other.to_owned()),
        }
    }

    /// One line (without its `\n`) read back.
    pub(crate) fn decode(self, line: &[u8]) -> Result<Entry, String> {
        match self {
            Format::Json => decode_json(line),
            Format::Fields => decode_fields(line, false),
            Format::FieldsAndEnding => decode_fields(line, true),
        }
    }

    /// Whether this is the format written now (an object in an earlier one is rewritten).
    pub(crate) fn is_current(self) -> bool {
        self == Format::FieldsAndEnding
    }
}

/// `entry` as one line of the [`CURRENT`] format, `\n` included, appended to `out`; false
/// (nothing written) for a key that would break the line, which no index subject is.
pub(crate) fn encode(entry: &Entry, out: &mut Vec<u8>) -> bool {
    if entry
        .key
        .bytes()
        .any(|b| b == b'\t' || b == b'\n' || b == b'\\')
        || entry.key.is_empty()
    {
        return false;
    }
    let s = &entry.summary;
    out.extend_from_slice(entry.key.as_bytes());
    out.push(b'\t');
    if let Some(id) = s.id {
        out.extend_from_slice(
            id.hyphenated()
                .encode_lower(&mut Uuid::encode_buffer())
                .as_bytes(),
        );
    }
    out.push(b'\t');
    text(out, s.created.as_deref());
    out.push(b'\t');
    text(out, s.updated.as_deref());
    out.push(b'\t');
    out.extend_from_slice(s.events.to_string().as_bytes());
    out.push(b'\t');
    out.extend_from_slice(s.size.to_string().as_bytes());
    out.push(b'\t');
    text(out, s.cwd.as_deref());
    out.push(b'\t');
    text(out, s.first_prompt.as_deref());
    out.push(b'\t');
    if let Some(ending) = &entry.ending {
        out.push(if ending.shut_down { b'1' } else { b'0' });
        out.push(if ending.error_since_prompt {
            b'1'
        } else {
            b'0'
        });
    }
    out.push(b'\t');
    text(out, entry.ending.as_ref().and_then(|e| e.model.as_deref()));
    out.push(b'\n');
    true
}

fn text(out: &mut Vec<u8>, value: Option<&str>) {
    let Some(value) = value else {
        return;
    };
    if value.is_empty() {
        out.extend_from_slice(b"\\0");
        return;
    }
    let mut rest = value.as_bytes();
    while let Some(at) = memchr::memchr3(b'\\', b'\t', b'\n', rest) {
        out.extend_from_slice(&rest[..at]);
        out.extend_from_slice(match rest[at] {
            b'\\' => b"\\\\",
            b'\t' => b"\\t",
            _ => b"\\n",
        });
        rest = &rest[at + 1..];
    }
    out.extend_from_slice(rest);
}

fn decode_json(line: &[u8]) -> Result<Entry, String> {
    let tab = memchr::memchr(b'\t', line).ok_or("a line without a key")?;
    let key = std::str::from_utf8(&line[..tab]).map_err(|e| format!("a key: {e}"))?;
    let summary = serde_json::from_slice(&line[tab + 1..]).map_err(|e| format!("an entry: {e}"))?;
    Ok(Entry {
        key: key.to_owned(),
        summary,
        ending: None,
    })
}

fn decode_fields(line: &[u8], with_ending: bool) -> Result<Entry, String> {
    let line = std::str::from_utf8(line).map_err(|e| format!("a line: {e}"))?;
    let mut fields = line.split('\t');
    let mut next = |name: &str| {
        fields
            .next()
            .ok_or_else(|| format!("a line without its {name}"))
    };
    let key = next("key")?;
    let id = next("id")?;
    let created = next("created time")?;
    let updated = next("updated time")?;
    let events = next("event count")?;
    let size = next("size")?;
    let cwd = next("working directory")?;
    let first_prompt = next("first prompt")?;
    let ending = if with_ending {
        let flags = next("ending")?;
        let model = next("model")?;
        let flag = |b: u8| match b {
            b'0' => Ok(false),
            b'1' => Ok(true),
            _ => Err(format!("an ending {flags:?}")),
        };
        match flags.as_bytes() {
            [] if model.is_empty() => None,
            &[shut_down, error] => Some(Ending {
                shut_down: flag(shut_down)?,
                error_since_prompt: flag(error)?,
                model: untext(model)?,
            }),
            _ => return Err(format!("an ending {flags:?} with a model {model:?}")),
        }
    } else {
        None
    };
    if fields.next().is_some() {
        return Err("a line with more fields than its format has".to_owned());
    }
    if key.is_empty() {
        return Err("a line without its key".to_owned());
    }
    let number = |name: &str, text: &str| {
        text.parse::<u64>()
            .map_err(|e| format!("{name} {text:?}: {e}"))
    };
    Ok(Entry {
        key: key.to_owned(),
        summary: SessionSummary {
            id: match id {
                "" => None,
                id => Some(Uuid::parse_str(id).map_err(|e| format!("an id {id:?}: {e}"))?),
            },
            cwd: untext(cwd)?,
            created: untext(created)?,
            updated: untext(updated)?,
            events: number("an event count", events)?,
            size: number("a size", size)?,
            first_prompt: untext(first_prompt)?,
        },
        ending,
    })
}

fn untext(field: &str) -> Result<Option<String>, String> {
    if field.is_empty() {
        return Ok(None);
    }
    if !field.contains('\\') {
        return Ok(Some(field.to_owned()));
    }
    if field == "\\0" {
        return Ok(Some(String::new()));
    }
    let mut out = String::with_capacity(field.len());
    let mut chars = field.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        out.push(match chars.next() {
            Some('\\') => '\\',
            Some('t') => '\t',
            Some('n') => '\n',
            other => return Err(format!("an unknown escape \\{}", other.unwrap_or(' '))),
        });
    }
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(cwd: Option<&str>, prompt: Option<&str>) -> Entry {
        let id = Uuid::from_u128(7);
        Entry {
            key: id.to_string(),
            summary: SessionSummary {
                id: Some(id),
                cwd: cwd.map(str::to_owned),
                created: Some("2026-12-01T00:00:00.000Z".into()),
                updated: None,
                events: 12,
                size: 3456,
                first_prompt: prompt.map(str::to_owned),
            },
            ending: None,
        }
    }

    #[test]
    fn fields_round_trip_every_text() {
        for (cwd, prompt) in [
            (
                Some("/w\tith \"tab\""),
                Some("line\nbreak \\ \\t \u{2028} «é»"),
            ),
            (Some(""), None),
            (None, Some("\\0")),
            (Some("\\"), Some("\t\n")),
        ] {
            for ending in [
                None,
                Some(Ending {
                    shut_down: true,
                    error_since_prompt: false,
                    model: prompt.map(str::to_owned),
                }),
                Some(Ending {
                    shut_down: false,
                    error_since_prompt: true,
                    model: Some(String::new()),
                }),
            ] {
                let mut e = entry(cwd, prompt);
                e.ending = ending;
                let mut line = Vec::new();
                assert!(encode(&e, &mut line));
                assert_eq!(line.iter().filter(|&&b| b == b'\n').count(), 1);
                let back = Format::FieldsAndEnding
                    .decode(&line[..line.len() - 1])
                    .unwrap();
                assert_eq!(back, e, "{cwd:?} {prompt:?}");
            }
        }
        let mut no_id = entry(None, None);
        no_id.summary.id = None;
        let mut line = Vec::new();
        assert!(encode(&no_id, &mut line));
        assert_eq!(
            Format::FieldsAndEnding
                .decode(&line[..line.len() - 1])
                .unwrap(),
            no_id
        );
        // A format-2 line (no ending, no model) is read with none.
        let two = b"key\t\t\t\t1\t2\t\t";
        assert_eq!(Format::Fields.decode(two).unwrap().ending, None);
        assert!(Format::FieldsAndEnding.decode(two).is_err());
    }

    #[test]
    fn bad_lines_and_unknown_formats_are_refused() {
        for bad in [
            &b"key\tnot-a-uuid\t\t\t1\t2\t\t"[..],
            b"key\t\t\t\tmany\t2\t\t",
            b"key\t\t\t\t1\t2\t\t\textra",
            b"key\t\t\t\t1\t2",
            b"key\t\t\t\t1\t2\t\\x\t",
            b"\t\t\t\t1\t2\t\t",
            b"key\t\t\t\t1\t2\t\t\xff",
        ] {
            assert!(
                Format::Fields.decode(bad).is_err(),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
        for bad in [
            &b"key\t\t\t\t1\t2\t\t\t2\t"[..],
            b"key\t\t\t\t1\t2\t\t\t1\t",
            b"key\t\t\t\t1\t2\t\t\t\tgpt-4.1",
            b"key\t\t\t\t1\t2\t\t\t10\tgpt\t",
        ] {
            assert!(
                Format::FieldsAndEnding.decode(bad).is_err(),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
        assert_eq!(Format::named(None), Ok(Format::Json));
        assert_eq!(Format::named(Some("2")), Ok(Format::Fields));
        assert_eq!(Format::named(Some("3")), Ok(Format::FieldsAndEnding));
        assert_eq!(Format::named(Some("4")), Err("4".to_owned()));
        let mut bad_key = entry(None, None);
        bad_key.key = "a\tb".into();
        let mut line = Vec::new();
        assert!(!encode(&bad_key, &mut line) && line.is_empty());
    }
}
