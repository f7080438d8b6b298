//! Lines too long to hold in memory, read and checked as a stream.
//!
//! The audit keeps at most a few MiB of a line; a longer one is parsed by `serde_json` straight
//! from the file, following the same envelope rules as [`turnstile_journal::Event`] (the keys,
//! no duplicates, `data` an object, UUIDs, RFC 3339 timestamp), handing each wanted member of
//! `data` as raw JSON to the same [`Fields::set`] as the in-memory paths, and skipping the rest
//! without keeping it. UTF-8 is checked on the bytes as they pass. A wanted member is held
//! whole only up to the in-memory limit (`max_field`): past it the line is reported as bad,
//! naming the limit, so memory stays bounded whatever the line holds.

use std::borrow::Cow;
use std::cell::Cell;
use std::fmt;
use std::fs::File;
use std::io::{self, BufReader, Read};
use std::os::unix::fs::FileExt;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;
use turnstile_journal::{Timestamp, Uuid};

use super::line::{Facts, Outcome};
use super::scan::Source;
use crate::raw::fields::{Fields, KeyBytes, Kind, Store, is_wanted_key};
use crate::raw::types::type_ref;

/// Bytes read from the file per step.
const STEP: usize = 256 * 1024;

/// Parses the line of `source` starting at `offset`: what it is (a torn tail when the file
/// ends before its newline). A member the audit keeps is held up to the source's in-memory
/// limit.
pub(crate) fn parse_giant_line(
    source: &Source,
    offset: u64,
    store: &mut Store,
) -> io::Result<Outcome> {
    let capture = Capture {
        pos: Cell::new(offset),
        from: Cell::new(None),
        max: source.max_line as u64,
    };
    let mut reader =
        BufReader::with_capacity(STEP, LineReader::new(&source.file, source.size, &capture));
    let parsed = {
        let mut de = serde_json::Deserializer::from_reader(&mut reader);
        let envelope = EnvelopeSeed {
            store: &mut *store,
            capture: &capture,
        }
        .deserialize(&mut de);
        envelope.and_then(|e| de.end().map(|()| e))
    };
    // A refused capture ended the parse: the rest of the line is only read through.
    capture.from.set(None);
    // Whatever serde made of it, the line ends at its newline: read on to find it.
    let mut sink = [0u8; 4096];
    while reader.read(&mut sink)? > 0 {}
    let line = reader.into_inner();
    if let Some(error) = line.error {
        return Err(error);
    }
    if !line.newline {
        return Ok(Outcome::Torn);
    }
    let outcome = match parsed {
        Err(e) => Outcome::Bad(e.to_string()),
        Ok(_) if !line.utf8.finish() => Outcome::Bad("invalid UTF-8 in the line".to_owned()),
        Ok(envelope) => {
            let kind = Kind::of(&envelope.event_type);
            let mut fields = envelope.fields;
            fields.retain_for(kind);
            let (type_ref, ephemeral_type) = type_ref(&envelope.event_type, store);
            Outcome::Event(Facts {
                type_ref,
                kind,
                ephemeral_type,
                ephemeral_key: envelope.ephemeral_key,
                id: envelope.id.as_u128(),
                parent: envelope.parent.map(|p| p.as_u128()),
                agent: envelope.agent.as_deref().map(|a| store.push(a)),
                fields,
            })
        }
    };
    Ok(outcome)
}

/// Where the reader is (the offset just past what it read), and whether a wanted member is
/// being held since some offset: the reader refuses to go more than `max` bytes past it.
struct Capture {
    pos: Cell<u64>,
    from: Cell<Option<u64>>,
    max: u64,
}

impl Capture {
    fn start(&self) {
        self.from.set(Some(self.pos.get()));
    }

    fn end(&self) {
        self.from.set(None);
    }
}

/// Reads one line of the file: stops before its `\n`, checking UTF-8 on the way.
struct LineReader<'f> {
    file: &'f File,
    capture: &'f Capture,
    size: u64,
    newline: bool,
    utf8: Utf8Stream,
    error: Option<io::Error>,
}

impl<'f> LineReader<'f> {
    fn new(file: &'f File, size: u64, capture: &'f Capture) -> Self {
        LineReader {
            file,
            capture,
            size,
            newline: false,
            utf8: Utf8Stream::default(),
            error: None,
        }
    }
}

impl Read for LineReader<'_> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let pos = self.capture.pos.get();
        if self.newline || pos >= self.size || out.is_empty() {
            return Ok(0);
        }
        if let Some(from) = self.capture.from.get()
            && pos - from > self.capture.max
        {
            // Not `self.error`: the line is bad, the file is fine.
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "a member of `data` the audit reads is over {} bytes; it is not held in memory",
                    self.capture.max
                ),
            ));
        }
        let want = out
            .len()
            .min(usize::try_from(self.size - pos).unwrap_or(usize::MAX));
        let n = match self.file.read_at(&mut out[..want], pos) {
            Ok(0) => {
                // The file shrank under us: treat what we have as the end.
                self.size = pos;
                return Ok(0);
            }
            Ok(n) => n,
            Err(e) => {
                // serde would turn this into a syntax-looking error; keep the real one.
                let kind = e.kind();
                self.error = Some(e);
                return Err(io::Error::new(kind, "read failed"));
            }
        };
        let n = match memchr::memchr(b'\n', &out[..n]) {
            Some(i) => {
                self.newline = true;
                self.capture.pos.set(pos + i as u64 + 1);
                i
            }
            None => {
                self.capture.pos.set(pos + n as u64);
                n
            }
        };
        self.utf8.feed(&out[..n]);
        Ok(n)
    }
}

/// Incremental UTF-8 check over pieces that may cut a character.
#[derive(Default)]
struct Utf8Stream {
    carry: Vec<u8>,
    bad: bool,
}

impl Utf8Stream {
    fn feed(&mut self, mut piece: &[u8]) {
        if self.bad {
            return;
        }
        if !self.carry.is_empty() {
            let lead = self.carry[0];
            let len = if lead < 0xE0 {
                2
            } else if lead < 0xF0 {
                3
            } else {
                4
            };
            let need = len - self.carry.len();
            if piece.len() < need {
                self.carry.extend_from_slice(piece);
                return;
            }
            self.carry.extend_from_slice(&piece[..need]);
            if std::str::from_utf8(&self.carry).is_err() {
                self.bad = true;
                return;
            }
            self.carry.clear();
            piece = &piece[need..];
        }
        match std::str::from_utf8(piece) {
            Ok(_) => {}
            Err(e) if e.error_len().is_none() => {
                self.carry.extend_from_slice(&piece[e.valid_up_to()..])
            }
            Err(_) => self.bad = true,
        }
    }

    fn finish(&self) -> bool {
        !self.bad && self.carry.is_empty()
    }
}

struct Envelope {
    event_type: String,
    fields: Fields,
    id: Uuid,
    parent: Option<Uuid>,
    agent: Option<String>,
    ephemeral_key: bool,
}

struct EnvelopeSeed<'s> {
    store: &'s mut Store,
    capture: &'s Capture,
}

impl<'de> DeserializeSeed<'de> for EnvelopeSeed<'_> {
    type Value = Envelope;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Envelope, D::Error> {
        d.deserialize_map(self)
    }
}

fn set_once<T, E: de::Error>(slot: &mut Option<T>, value: T, key: &'static str) -> Result<(), E> {
    if slot.is_some() {
        return Err(E::duplicate_field(key));
    }
    *slot = Some(value);
    Ok(())
}

impl<'de> Visitor<'de> for EnvelopeSeed<'_> {
    type Value = Envelope;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an event object with type, data, id, timestamp and parentId")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Envelope, A::Error> {
        // Mirrors the rules of `Event`'s deserializer, key for key.
        let mut event_type: Option<String> = None;
        let mut fields: Option<Fields> = None;
        let mut id: Option<Uuid> = None;
        let mut timestamp: Option<Timestamp> = None;
        let mut parent: Option<Option<Uuid>> = None;
        let mut agent: Option<String> = None;
        let mut ephemeral_key = false;
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            match &*key {
                "type" => {
                    let name = map.next_value::<Cow<'de, str>>()?;
                    set_once(&mut event_type, name.into_owned(), "type")?;
                }
                "data" => {
                    let data = map.next_value_seed(DataSeed {
                        store: &mut *self.store,
                        capture: self.capture,
                    })?;
                    set_once(&mut fields, data, "data")?;
                }
                "id" => set_once(&mut id, map.next_value()?, "id")?,
                "timestamp" => set_once(&mut timestamp, map.next_value()?, "timestamp")?,
                "parentId" => set_once(&mut parent, map.next_value()?, "parentId")?,
                "agentId" => set_once(&mut agent, map.next_value()?, "agentId")?,
                "ephemeral" => ephemeral_key |= map.next_value::<bool>()?,
                other => {
                    return Err(de::Error::custom(format!(
                        "unknown top-level key `{other}` (the envelope allows type, data, id, timestamp, parentId, ephemeral, agentId)"
                    )));
                }
            }
        }
        let fields = fields.ok_or_else(|| de::Error::missing_field("data"))?;
        let event_type = event_type.ok_or_else(|| de::Error::missing_field("type"))?;
        let id = id.ok_or_else(|| de::Error::missing_field("id"))?;
        timestamp.ok_or_else(|| de::Error::missing_field("timestamp"))?;
        let parent = parent.ok_or_else(|| de::Error::missing_field("parentId"))?;
        Ok(Envelope {
            event_type,
            fields,
            id,
            parent,
            agent,
            ephemeral_key,
        })
    }
}

struct DataSeed<'s> {
    store: &'s mut Store,
    capture: &'s Capture,
}

impl<'de> DeserializeSeed<'de> for DataSeed<'_> {
    type Value = Fields;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Fields, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for DataSeed<'_> {
    type Value = Fields;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("`data` as a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Fields, A::Error> {
        let mut fields = Fields::default();
        let mut stack = Vec::new();
        while let Some(key) = map.next_key::<KeyBytes>()? {
            if is_wanted_key(&key.0) {
                // Wanted values are small (ids, flags, the tool request list): keep them raw.
                self.capture.start();
                let raw: Box<RawValue> = map.next_value()?;
                self.capture.end();
                fields.set(None, &key.0, raw.get().as_bytes(), self.store, &mut stack);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(fields)
    }
}
