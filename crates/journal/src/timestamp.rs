//! Event timestamps: UTC, millisecond precision, written as `YYYY-MM-DDTHH:MM:SS.mmmZ`.

use std::fmt;

use time::format_description::well_known::Rfc3339;
use time::{OffsetDateTime, UtcOffset};

/// An event's timestamp, kept as milliseconds since the Unix epoch.
///
/// A timestamp read in another RFC 3339 spelling (an offset, more digits) keeps its original
/// text so that a foreign journal is written back unchanged.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Timestamp {
    millis: i64,
    original: Option<Box<str>>,
}

/// Why a timestamp string was refused.
#[derive(Debug, Clone, thiserror::Error)]
#[error("invalid timestamp {text:?}: expected RFC 3339 such as 2026-01-31T12:00:00.000Z")]
pub struct TimestampError {
    /// The text that was refused.
    pub text: String,
}

impl Timestamp {
    /// The current time, truncated to milliseconds.
    pub fn now() -> Self {
        Self::from_datetime(OffsetDateTime::now_utc())
    }

    /// A timestamp from milliseconds since the Unix epoch.
    pub fn from_millis(millis: i64) -> Self {
        Timestamp {
            millis,
            original: None,
        }
    }

    /// Milliseconds since the Unix epoch.
    pub fn millis(&self) -> i64 {
        self.millis
    }

    fn from_datetime(dt: OffsetDateTime) -> Self {
        Self::from_millis((dt.unix_timestamp_nanos() / 1_000_000) as i64)
    }

    /// Parses RFC 3339; the canonical form is recognised without the general parser.
    pub fn parse(text: &str) -> Result<Self, TimestampError> {
        if let Some(millis) = parse_canonical(text.as_bytes()) {
            return Ok(Self::from_millis(millis));
        }
        let dt = OffsetDateTime::parse(text, &Rfc3339).map_err(|_| TimestampError {
            text: text.to_owned(),
        })?;
        let mut ts = Self::from_datetime(dt);
        ts.original = Some(text.into());
        Ok(ts)
    }

    /// Whether `text` is a timestamp in the canonical spelling (`YYYY-MM-DDTHH:MM:SS.mmmZ`, a
    /// real date and time): what fast scanners may accept without the general parser.
    pub fn is_canonical(text: &[u8]) -> bool {
        parse_canonical(text).is_some()
    }

    /// Writes the canonical (or original) text into `out`.
    pub fn write_to(&self, out: &mut Vec<u8>) {
        match &self.original {
            Some(text) => out.extend_from_slice(text.as_bytes()),
            None => write_canonical(self.millis, out),
        }
    }

    /// The text written to the journal.
    pub fn to_text(&self) -> String {
        let mut out = Vec::with_capacity(24);
        self.write_to(&mut out);
        String::from_utf8(out).unwrap_or_default()
    }
}

fn write_canonical(millis: i64, out: &mut Vec<u8>) {
    let secs = millis.div_euclid(1000);
    let ms = millis.rem_euclid(1000) as u32;
    let dt = OffsetDateTime::from_unix_timestamp(secs)
        .unwrap_or(OffsetDateTime::UNIX_EPOCH)
        .to_offset(UtcOffset::UTC);
    let s = format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        dt.year(),
        u8::from(dt.month()),
        dt.day(),
        dt.hour(),
        dt.minute(),
        dt.second(),
        ms
    );
    out.extend_from_slice(s.as_bytes());
}

/// Fast path for `YYYY-MM-DDTHH:MM:SS.mmmZ`; anything else goes to the general parser.
fn parse_canonical(b: &[u8]) -> Option<i64> {
    if b.len() != 24
        || b[4] != b'-'
        || b[7] != b'-'
        || b[10] != b'T'
        || b[13] != b':'
        || b[16] != b':'
        || b[19] != b'.'
        || b[23] != b'Z'
    {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        b[r].iter().try_fold(0i64, |acc, &c| {
            c.is_ascii_digit().then(|| acc * 10 + i64::from(c - b'0'))
        })
    };
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, s, ms) = (num(11..13)?, num(14..16)?, num(17..19)?, num(20..23)?);
    let month = time::Month::try_from(u8::try_from(mo).ok()?).ok()?;
    let date = time::Date::from_calendar_date(i32::try_from(y).ok()?, month, u8::try_from(d).ok()?)
        .ok()?;
    let t = time::Time::from_hms(
        u8::try_from(h).ok()?,
        u8::try_from(mi).ok()?,
        u8::try_from(s).ok()?,
    )
    .ok()?;
    let secs = date.with_time(t).assume_utc().unix_timestamp();
    Some(secs * 1000 + ms)
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_text())
    }
}

impl fmt::Debug for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.to_text())
    }
}

impl serde::Serialize for Timestamp {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_text())
    }
}

impl<'de> serde::Deserialize<'de> for Timestamp {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        Timestamp::parse(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_round_trip() {
        for text in [
            "2026-11-29T14:34:34.757Z",
            "1970-01-01T00:00:00.000Z",
            "2024-02-29T23:59:59.999Z",
        ] {
            let ts = Timestamp::parse(text).expect("parse");
            assert!(ts.original.is_none());
            assert_eq!(ts.to_text(), text);
            assert_eq!(Timestamp::from_millis(ts.millis()).to_text(), text);
        }
    }

    #[test]
    fn other_spellings_keep_their_text() {
        let ts = Timestamp::parse("2026-11-29T15:34:34.757123+01:00").expect("parse");
        assert_eq!(ts.to_text(), "2026-11-29T15:34:34.757123+01:00");
        assert_eq!(
            ts.millis(),
            Timestamp::parse("2026-11-29T14:34:34.757Z")
                .unwrap()
                .millis()
        );
    }

    #[test]
    fn refuses_garbage() {
        for bad in [
            "",
            "yesterday",
            "2026-13-01T00:00:00.000Z",
            "2026-02-30T00:00:00.000Z",
        ] {
            assert!(Timestamp::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn now_is_canonical() {
        let text = Timestamp::now().to_text();
        assert_eq!(text.len(), 24);
        assert!(text.ends_with('Z'));
    }
}
