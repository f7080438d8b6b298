//! The fast way to read a tool result whose `data` the line check has just validated: the
//! top-level members it reported are looked at one by one, and the result's `content` is
//! unescaped in one pass over its bytes, without `serde_json`'s per-escape calls.
//!
//! It only answers when it can tell the payload type would read the payload without error, and
//! then gives what the payload type would give; anything unusual (an escaped key, a repeated
//! field, a surrogate escape, a nested value deep enough to meet `serde_json`'s depth limit, a
//! field of another JSON type) is left to [`super::fold_tool`]'s serde reading.

use serde::Deserialize;

use crate::audit::json;
use crate::fold_tool::{
    LeanError, LeanShellExecution, MapCheck, SeqCheck, StrCheck, ToolOutcome, ValueCheck,
};

/// One top-level member of `data`: the raw key (with its quotes) and the raw value, as byte
/// ranges of `data`.
pub(crate) type Member = [usize; 4];

/// Values standing alone in a check below are this many levels less deep than in their
/// payload; a value with fewer opening brackets than this is far from the depth limit (128).
const SHALLOW_BRACKETS: usize = 100;

/// The outcome of the tool result `data` (valid JSON, its top-level `members` as the line check
/// found them), when certain; `None` to leave it to the serde reading.
pub(crate) fn fast_outcome(
    data: &str,
    members: &[Member],
    stack: &mut Vec<u8>,
) -> Option<ToolOutcome> {
    let mut seen = 0u32;
    let mut success = None;
    let mut content: Option<Option<String>> = None;
    let mut message: Option<Option<String>> = None;
    for &[ks, ke, vs, ve] in members {
        let key = data.get(ks + 1..ke.checked_sub(1)?)?;
        let raw = data.get(vs..ve)?;
        if key.contains('\\') {
            return None;
        }
        let bit = match key {
            "toolCallId" => 0,
            "model" => 1,
            "interactionId" => 2,
            "turnId" => 3,
            "rte" => 4,
            "success" => 5,
            "isUserRequested" => 6,
            "result" => 7,
            "error" => 8,
            "mcpMeta" => 9,
            "toolTelemetry" => 10,
            "toolDescription" => 11,
            "sandboxed" => 12,
            "shellExecution" => 13,
            "parentToolCallId" => 14,
            "fusion" => 15,
            // Ignored by the payload type whatever it holds (valid JSON, any depth).
            _ => continue,
        };
        if seen & (1 << bit) != 0 {
            return None;
        }
        seen |= 1 << bit;
        match bit {
            5 => {
                success = Some(match raw {
                    "true" => true,
                    "false" => false,
                    _ => return None,
                })
            }
            7 => {
                content = Some(if raw == "null" {
                    None
                } else {
                    Some(result_content(raw.as_bytes(), stack)?)
                })
            }
            8 => {
                message = Some(if raw == "null" {
                    None
                } else {
                    Some(check::<LeanError>(raw)?.message)
                })
            }
            0 => {
                check::<StrCheck>(raw)?;
            }
            1 | 2 | 3 | 14 => {
                check::<Option<StrCheck>>(raw)?;
            }
            4 | 6 | 12 => {
                check::<Option<bool>>(raw)?;
            }
            9 | 11 | 15 => {
                check::<Option<ValueCheck>>(raw)?;
            }
            10 => {
                check::<Option<MapCheck>>(raw)?;
            }
            _ => {
                check::<Option<LeanShellExecution>>(raw)?;
            }
        }
    }
    // `toolCallId` and `success` are required.
    let success = success.filter(|_| seen & 1 != 0)?;
    let content = match (content.flatten(), message.flatten()) {
        (Some(content), _) => content,
        (None, Some(message)) => message,
        (None, None) => String::new(),
    };
    Some(ToolOutcome { content, success })
}

/// `raw` read as `T` on its own, when it is shallow enough to be read the same way inside
/// its payload.
fn check<'a, T: Deserialize<'a>>(raw: &'a str) -> Option<T> {
    let brackets = raw.bytes().filter(|&b| b == b'[' || b == b'{').count();
    if brackets >= SHALLOW_BRACKETS {
        return None;
    }
    serde_json::from_str(raw).ok()
}

/// The `content` of a valid `result` object, when its other members are certain to be read
/// without error.
fn result_content(b: &[u8], stack: &mut Vec<u8>) -> Option<String> {
    if b.first() != Some(&b'{') {
        return None;
    }
    let mut seen = 0u32;
    let mut content = None;
    let mut i = json::ws(b, 1);
    if b.get(i) == Some(&b'}') {
        // `content` is required.
        return None;
    }
    loop {
        // A key without escapes (validated JSON: it ends at the next quote).
        if b.get(i) != Some(&b'"') {
            return None;
        }
        let key_end = i + 1 + memchr::memchr2(b'"', b'\\', b.get(i + 1..)?)?;
        if b[key_end] != b'"' {
            return None;
        }
        let key = &b[i + 1..key_end];
        i = json::ws(b, key_end + 1);
        if b.get(i) != Some(&b':') {
            return None;
        }
        i = json::ws(b, i + 1);
        let bit = match key {
            b"content" => 0,
            b"detailedContent" => 1,
            b"contents" => 2,
            b"binaryResultsForLlm" => 3,
            b"uiResource" => 4,
            b"structuredContent" => 5,
            b"citableSources" => 6,
            b"mcpMeta" => 7,
            _ => 8,
        };
        if bit < 8 {
            if seen & (1 << bit) != 0 {
                return None;
            }
            seen |= 1 << bit;
        }
        let start = i;
        match bit {
            0 => {
                let mut out = Vec::new();
                i = string(b, i, Some(&mut out))?;
                // The room reserved was the rest of the result (`detailedContent` too): a
                // state that keeps every result must not keep that room as well.
                if out.capacity() > out.len() + out.len() / 8 + 2 * BLOCK {
                    out.shrink_to_fit();
                }
                // Valid by construction (UTF-8 input, escapes decoded to chars); checked anyway,
                // at SIMD speed.
                simdutf8::basic::from_utf8(&out).ok()?;
                // SAFETY: just checked to be UTF-8.
                content = Some(unsafe { String::from_utf8_unchecked(out) });
            }
            1 if b.get(i) == Some(&b'"') => i = string(b, i, None)?,
            _ => {
                i = json::skip_any(b, i, stack)?;
                // Known fields get their own check; unknown ones are ignored as serde does.
                let raw = std::str::from_utf8(&b[start..i]).ok()?;
                let ok = match bit {
                    // `null`, or a string (taken above).
                    1 => raw == "null",
                    2 | 3 | 6 => check::<Option<SeqCheck>>(raw).is_some(),
                    4 | 5 | 7 => check::<Option<ValueCheck>>(raw).is_some(),
                    _ => true,
                };
                if !ok {
                    return None;
                }
            }
        }
        i = json::ws(b, i);
        match b.get(i)? {
            b',' => i = json::ws(b, i + 1),
            b'}' => break,
            _ => return None,
        }
    }
    content
}

/// The string at `b[i]` (a quote) in valid JSON: the index after it, its unescaped bytes
/// appended to `out` (if given); `None` for a `\u` escape of a surrogate not paired as a
/// `String` needs, or anything that is not a string.
fn string(b: &[u8], mut i: usize, mut out: Option<&mut Vec<u8>>) -> Option<usize> {
    if b.get(i) != Some(&b'"') {
        return None;
    }
    i += 1;
    // Unescaping never lengthens: the rest of `b` (and a block of slack for the copy) is room
    // enough for the whole string.
    if let Some(out) = out.as_deref_mut() {
        out.reserve(b.len() - i + BLOCK);
    }
    loop {
        i = match out.as_deref_mut() {
            Some(out) => copy_run(b, i, out)?,
            None => special(b, i)?,
        };
        if b[i] == b'"' {
            return Some(i + 1);
        }
        // A backslash: the escape after it.
        let unescaped = match *b.get(i + 1)? {
            b'"' => b'"',
            b'\\' => b'\\',
            b'/' => b'/',
            b'b' => 0x08,
            b'f' => 0x0C,
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            b'u' => {
                let n = hex4(b, i + 2)?;
                let (c, used) = match n {
                    0xD800..=0xDBFF => {
                        if b.get(i + 6..i + 8)? != b"\\u" {
                            return None;
                        }
                        let low = hex4(b, i + 8)?;
                        if !(0xDC00..=0xDFFF).contains(&low) {
                            return None;
                        }
                        let c =
                            0x1_0000 + ((u32::from(n) - 0xD800) << 10) + (u32::from(low) - 0xDC00);
                        (char::from_u32(c)?, 12)
                    }
                    0xDC00..=0xDFFF => return None,
                    _ => (char::from_u32(u32::from(n))?, 6),
                };
                if let Some(out) = out.as_deref_mut() {
                    let mut utf8 = [0u8; 4];
                    out.extend_from_slice(c.encode_utf8(&mut utf8).as_bytes());
                }
                i += used;
                continue;
            }
            _ => return None,
        };
        if let Some(out) = out.as_deref_mut() {
            out.push(unescaped);
        }
        i += 2;
    }
}

/// Bytes looked at per step by [`copy_run`] and [`special`].
const BLOCK: usize = 16;

/// Copies `b[i..]` up to the first quote or backslash into `out`; its index. Most runs between
/// escapes are short: one 16-byte step each, no call.
#[inline(always)]
fn copy_run(b: &[u8], mut i: usize, out: &mut Vec<u8>) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        while i + BLOCK <= b.len() {
            // Whole blocks are stored, the length then set to what belongs to the run.
            if out.capacity() - out.len() < BLOCK {
                out.reserve(BLOCK);
            }
            let len = out.len();
            // SAFETY: SSE2 is part of the x86_64 baseline; the load reads b[i..i + 16] (in
            // bounds by the loop condition), the store writes out's spare capacity (16 bytes
            // or more, reserved just above), and the new length only covers bytes written.
            let mask = unsafe {
                let v = _mm_loadu_si128(b.as_ptr().add(i).cast());
                _mm_storeu_si128(out.as_mut_ptr().add(len).cast(), v);
                let quote = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8));
                let backslash = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8));
                _mm_movemask_epi8(_mm_or_si128(quote, backslash)) as u32
            };
            let step = if mask == 0 {
                BLOCK
            } else {
                mask.trailing_zeros() as usize
            };
            // SAFETY: `out[len..len + step]` was just written (step <= 16).
            unsafe { out.set_len(len + step) };
            i += step;
            if mask != 0 {
                return Some(i);
            }
        }
    }
    let end = special(b, i)?;
    out.extend_from_slice(&b[i..end]);
    Some(end)
}

/// The value of the four hex digits at `b[i..i + 4]`.
fn hex4(b: &[u8], i: usize) -> Option<u16> {
    let digits = std::str::from_utf8(b.get(i..i + 4)?).ok()?;
    if !digits.bytes().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    u16::from_str_radix(digits, 16).ok()
}

/// The index of the first quote or backslash at or after `i`.
#[inline(always)]
fn special(b: &[u8], i: usize) -> Option<usize> {
    memchr::memchr2(b'"', b'\\', b.get(i..)?).map(|p| i + p)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn members(data: &str) -> Vec<Member> {
        let mut out = Vec::new();
        let mut stack = Vec::new();
        let base = data.as_ptr() as usize;
        assert!(json::scan_object(
            data.as_bytes(),
            &mut stack,
            &mut |k, v| {
                let at = |s: &[u8]| s.as_ptr() as usize - base;
                out.push([at(k), at(k) + k.len(), at(v), at(v) + v.len()]);
            }
        ));
        out
    }

    #[test]
    fn unescapes_as_serde_does() {
        let texts = [
            "",
            "plain",
            "a\n\"b\"\t\\c/é 🚀 \u{2028}",
            "\u{1}\u{1f}\u{7f}",
            &"x\\\"y".repeat(40),
        ];
        for text in texts {
            let data = serde_json::json!({"toolCallId": "a", "success": true,
                "result": {"content": text, "detailedContent": text}})
            .to_string();
            let got = fast_outcome(&data, &members(&data), &mut Vec::new());
            assert_eq!(got.map(|o| o.content), Some(text.to_owned()), "{data}");
        }
        // Escapes serde_json writes differently from the runtime.
        let data = r#"{"toolCallId":"a","success":true,"result":{"content":"\u00e9\ud83d\ude80\/\b\f\r"}}"#;
        let got = fast_outcome(data, &members(data), &mut Vec::new()).unwrap();
        assert_eq!(got.content, "é🚀/\u{8}\u{c}\r");
    }

    #[test]
    fn leaves_the_unusual_to_serde() {
        let unusual = [
            r#"{"toolCallId":"a","success":true,"result":{"content":"\ud800"}}"#,
            r#"{"toolCallId":"a","success":true,"result":{"content":"c","detailedContent":"\udc00"}}"#,
            r#"{"toolCallId":"a","success":true,"result":{"content":"c","content":"d"}}"#,
            r#"{"tool\u0043allId":"a","success":true}"#,
            r#"{"toolCallId":"a","success":true,"success":true}"#,
            r#"{"toolCallId":"a","success":"0"}"#,
            r#"{"success":true}"#,
            r#"{"toolCallId":"a","success":true,"result":{"con\u0074ent":"c"}}"#,
            r#"{"toolCallId":"a","success":true,"result":{"content":1}}"#,
        ];
        for data in unusual {
            assert_eq!(
                fast_outcome(data, &members(data), &mut Vec::new()),
                None,
                "{data}"
            );
        }
    }
}
