//! The standard layout of a journal line, read at fixed places without a parse.
//!
//! Lines written by the Copilot runtime and by turnstile have one layout:
//! `{"type":"T","data":{...},"id":"<uuid>","timestamp":"<24 chars>","parentId":null|"<uuid>"}`.
//! This finds the type name, the `data` bytes and the fixed tail of such a line and checks the
//! tail's values (uuids, a canonical timestamp); `data` itself is left to the caller's check.
//! Any other layout gives `None`, and the caller takes its slow path.

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
