//! The fast way to read a tool result whose `data` the line check has just validated: the
//! top-level members it reported are looked at one by one, and the result's `content` is
//! unescaped in one pass over its bytes, without `serde_json`'s per-escape calls.
//!
//! It only answers when it can tell the payload type would read the payload without error, and
//! then gives what the payload type would give; anything unusual (an escaped key, a repeated
//! field, a surrogate escape, a nested value deep enough to meet `serde_json`'s depth limit, a
//! field of another JSON type) is left to [`super::fold_tool`]'s serde reading.

use std::sync::LazyLock;

use serde::Deserialize;

use crate::fold_tool_lean::{
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
///
/// With `lazy`, a `content` with escapes (none of them a surrogate's) is kept as written, escaped
/// ([`ToolOutcome::escaped`]): the fold unescapes only the results still in the conversation
/// at its end ([`unescape`]).
pub(crate) fn fast_outcome(
    data: &str,
    members: &[Member],
    result_members: &[Member],
    lazy: bool,
) -> Option<ToolOutcome> {
    let mut seen = 0u32;
    let mut success = None;
    let mut content: Option<Option<(String, bool)>> = None;
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
                    Some(result_content(data, raw, result_members, lazy)?)
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
    let (content, escaped) = match (content.flatten(), message.flatten()) {
        (Some(content), _) => content,
        (None, Some(message)) => (message, false),
        (None, None) => (String::new(), false),
    };
    Some(ToolOutcome {
        content,
        success,
        escaped,
    })
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

/// The `content` of a valid `result` object `raw` (a value in `data`, with its `members` as
/// ranges of `data`), when its other members are certain to be read without error, and
/// whether it is kept escaped (only with `lazy`).
fn result_content(data: &str, raw: &str, members: &[Member], lazy: bool) -> Option<(String, bool)> {
    if !raw.starts_with('{') {
        return None;
    }
    let b = data.as_bytes();
    let mut seen = 0u32;
    let mut content = None;
    for &[ks, ke, vs, ve] in members {
        let key = b.get(ks + 1..ke.checked_sub(1)?)?;
        if key.contains(&b'\\') {
            return None;
        }
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
        let is_string = b.get(vs) == Some(&b'"');
        match bit {
            0 => {
                if !is_string {
                    return None;
                }
                // Without a surrogate escape (the only escape whose decoding can fail) the
                // text is copied as written, to be unescaped later if at all, or as it is when
                // it has no escape.
                let body = b.get(vs + 1..ve.checked_sub(1)?)?;
                let backslash = memchr::memchr(b'\\', body).is_some();
                if (lazy || !backslash) && !may_escape_surrogate(body) {
                    // Quotes are ASCII: the bytes between them are whole characters.
                    content = Some((data.get(vs + 1..ve - 1)?.to_owned(), backslash));
                } else {
                    let mut i = vs;
                    content = Some((unescaped(b, &mut i)?, false));
                }
            }
            // Only a surrogate escape needs the walk that checks the pairs.
            1 if is_string => {
                if may_escape_surrogate(b.get(vs + 1..ve.checked_sub(1)?)?) {
                    string(b, vs, None)?;
                }
            }
            _ => {
                // Known fields get their own check; unknown ones are ignored as serde does.
                let raw = data.get(vs..ve)?;
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
    }
    content
}

/// Whether the body of a JSON string may hold a `\u` escape of a surrogate (`\uD800` to
/// `\uDFFF`), the only escape whose decoding can fail. A backslash, `u`, `D` or `d`, then one
/// of `8-9 A-F a-f` is counted; an escaped backslash before such text is counted too, which only
/// costs the slower walk.
fn may_escape_surrogate(raw: &[u8]) -> bool {
    static FINDER: LazyLock<memchr::memmem::Finder<'static>> =
        LazyLock::new(|| memchr::memmem::Finder::new(b"\\u"));
    FINDER.find_iter(raw).any(|at| {
        matches!(raw.get(at + 2), Some(b'd' | b'D'))
            && matches!(
                raw.get(at + 3),
                Some(b'8'..=b'9' | b'a'..=b'f' | b'A'..=b'F')
            )
    })
}

/// The string at `b[*i]` (a quote) in valid JSON, unescaped; `*i` moves past it.
fn unescaped(b: &[u8], i: &mut usize) -> Option<String> {
    let mut out = Vec::new();
    *i = string(b, *i, Some(&mut out))?;
    // The room reserved was the rest of the input (`detailedContent` too): a state that keeps
    // every result must not keep that room as well.
    if out.capacity() > out.len() + out.len() / 8 + 2 * BLOCK {
        out.shrink_to_fit();
    }
    // Valid by construction (UTF-8 input, escapes decoded to chars); checked anyway, at SIMD
    // speed.
    simdutf8::basic::from_utf8(&out).ok()?;
    // SAFETY: just checked to be UTF-8.
    Some(unsafe { String::from_utf8_unchecked(out) })
}

/// A `content` kept escaped by [`fast_outcome`] (the bytes between the quotes of a valid JSON
/// string without surrogate escapes), unescaped: what the payload type would have read.
pub(crate) fn unescape(escaped: &str) -> String {
    let mut quoted = Vec::with_capacity(escaped.len() + 2);
    quoted.push(b'"');
    quoted.extend_from_slice(escaped.as_bytes());
    quoted.push(b'"');
    let mut i = 0;
    match unescaped(&quoted, &mut i) {
        Some(text) if i == quoted.len() => text,
        // Not reached for what `fast_outcome` keeps escaped; serde decides anything else.
        _ => serde_json::from_slice::<String>(&quoted).unwrap_or_else(|_| escaped.to_owned()),
    }
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
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;

    /// `fast_outcome` of a valid `data`, not lazy.
    fn outcome(data: &str) -> Option<ToolOutcome> {
        let (members, result_members) = members(data);
        fast_outcome(data, &members, &result_members, false)
    }

    /// The top-level members of `data` and those of its `result`.
    pub(crate) fn members(data: &str) -> (Vec<Member>, Vec<Member>) {
        let (mut top, mut result) = (Vec::new(), Vec::new());
        let base = data.as_ptr() as usize;
        let range = |k: &[u8], v: &[u8]| {
            let at = |s: &[u8]| s.as_ptr() as usize - base;
            [at(k), at(k) + k.len(), at(v), at(v) + v.len()]
        };
        assert!(crate::raw::json::scan_object_nested(
            data.as_bytes(),
            &mut Vec::new(),
            &mut |k, v| top.push(range(k, v)),
            Some((b"\"result\"", &mut |k, v| result.push(range(k, v)))),
        ));
        (top, result)
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
            let got = outcome(&data);
            assert_eq!(got.map(|o| o.content), Some(text.to_owned()), "{data}");
        }
        // Escapes serde_json writes differently from the runtime.
        let data = r#"{"toolCallId":"a","success":true,"result":{"content":"\u00e9\ud83d\ude80\/\b\f\r"}}"#;
        let got = outcome(data).unwrap();
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
            assert_eq!(outcome(data), None, "{data}");
        }
    }

    /// What the fold ends with for `data` read lazily: the outcome with its text unescaped.
    fn lazy_read(data: &str) -> Result<(String, bool), String> {
        let (mut members, mut inner) = (Vec::new(), Vec::new());
        let read = crate::fold_tool::scan_tool_result(
            data,
            &mut Vec::new(),
            true,
            &mut members,
            &mut inner,
        );
        let outcome = read.ok_or("not valid JSON")?.map_err(|e| e.to_string())?;
        let content = if outcome.escaped {
            unescape(&outcome.content)
        } else {
            outcome.content
        };
        Ok((content, outcome.success))
    }

    fn full_read(data: &str) -> Result<(String, bool), String> {
        crate::fold_tool::read_tool_result_full(data)
            .map(|o| (o.content, o.success))
            .map_err(|e| e.to_string())
    }

    #[test]
    fn lazy_content_unescapes_to_what_serde_reads() {
        let texts = [
            "",
            "plain",
            r#"a\n\"b\"\t\\c\/é 🚀 \u2028 \u00e9\b\f\r"#,
            r#"\ud83d\ude80 pair"#,
            r#"lone \ud800"#,
            r#"lone low \uDC00 x"#,
            r#"escaped backslash then text \\ud800"#,
            r#"\\u2028\\"#,
        ];
        for text in texts {
            for detailed in ["", r#"\ud800"#, r#"\ud83d\ude01 \n"#, r#"\\uD900"#] {
                let data = format!(
                    r#"{{"toolCallId":"a","success":true,"result":{{"content":"{text}","detailedContent":"{detailed}"}}}}"#
                );
                assert_eq!(lazy_read(&data), full_read(&data), "{data}");
            }
        }
    }

    fn string_body() -> impl Strategy<Value = String> {
        let atoms = prop::sample::select(vec![
            "a",
            "xyz",
            " ",
            "é",
            "🚀",
            "\\n",
            "\\\"",
            "\\\\",
            "\\/",
            "\\t",
            "\\b",
            "\\u00e9",
            "\\u2028",
            "\\uD83D\\uDE80",
            "\\ud83d",
            "\\ude80",
            "\\uDBFF",
            "\\u0000",
            "\\\\u",
            "\\\\ud800",
            "u",
            "d8",
            "\\udc",
            "\\u12",
            "\t",
        ]);
        prop::collection::vec(atoms, 0..80).prop_map(|parts| parts.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]
        /// Kept escaped and unescaped at the end, a result's text is what the payload type
        /// reads, and a result the payload type refuses is refused alike, whatever the escapes.
        #[test]
        fn lazy_reading_agrees_with_the_payload_type(
            content in string_body(),
            detailed in string_body(),
            pad in 0usize..70,
        ) {
            let data = format!(
                r#"{{"toolCallId":"a","success":false,"result":{{"content":"{}{content}","detailedContent":"{detailed}"}}}}"#,
                "p".repeat(pad)
            );
            let full = full_read(&data);
            let lazy = lazy_read(&data);
            match (&lazy, &full) {
                // Invalid JSON is refused by the line check before any payload is read.
                (Err(e), Err(_)) if e == "not valid JSON" => {}
                _ => prop_assert_eq!(&lazy, &full, "{}", data),
            }
        }
    }
}
