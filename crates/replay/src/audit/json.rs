//! A JSON validator for one object that reports the object's top-level members.
//!
//! It accepts exactly the syntax `serde_json` accepts (RFC 8259: no trailing commas, no leading
//! zeros, escapes `\" \\ \/ \b \f \n \r \t \uXXXX`, no raw control characters in strings; any
//! `\uXXXX` is accepted, like serde's skipping of ignored strings) and nothing about UTF-8, which
//! [`super::utf8`] checks. Strings, where nearly all the bytes of a journal are, are skipped 32
//! (AVX2) or 16 (SSE2) bytes at a time; structure is walked with an explicit stack, so nesting
//! depth costs memory, never the call stack.

/// Validates that `bytes` is exactly one JSON object (no surrounding whitespace) and calls
/// `member(raw_key, raw_value)` for each of its top-level members; `raw_key` keeps its quotes.
/// `stack` is scratch space reused between calls.
pub(crate) fn scan_object<'a>(
    bytes: &'a [u8],
    stack: &mut Vec<u8>,
    member: &mut dyn FnMut(&'a [u8], &'a [u8]),
) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2, checked just above.
            return unsafe { scan_object_avx2(bytes, stack, member) };
        }
        scan::<x86::Sse2>(bytes, stack, member)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        scan::<Scalar>(bytes, stack, member)
    }
}

/// Validates that `bytes` is exactly one JSON array and calls `element(raw, stack)` for each
/// element (`stack` is free for the callback to use).
pub(crate) fn scan_array<'a>(
    bytes: &'a [u8],
    stack: &mut Vec<u8>,
    element: &mut dyn FnMut(&'a [u8], &mut Vec<u8>),
) -> bool {
    let n = bytes.len();
    if n < 2 || bytes[0] != b'[' {
        return false;
    }
    let mut i = ws(bytes, 1);
    if i < n && bytes[i] == b']' {
        return i + 1 == n;
    }
    loop {
        let start = i;
        i = match skip_any(bytes, i, stack) {
            Some(j) => j,
            None => return false,
        };
        element(&bytes[start..i], stack);
        i = ws(bytes, i);
        if i >= n {
            return false;
        }
        match bytes[i] {
            b',' => i = ws(bytes, i + 1),
            b']' => return i + 1 == n,
            _ => return false,
        }
    }
}

/// Skips the valid JSON value at `i` (no leading whitespace); the index after it.
pub(crate) fn skip_any(b: &[u8], i: usize, stack: &mut Vec<u8>) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    {
        // Nested values inside `data` are small (tool requests); SSE2 is plenty here.
        skip_value::<x86::Sse2>(b, i, stack)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        skip_value::<Scalar>(b, i, stack)
    }
}

/// Validates that `bytes` is exactly one JSON value of any type (used by tests and the fuzz
/// comparisons against serde).
#[cfg(test)]
pub(crate) fn is_value(bytes: &[u8]) -> bool {
    // Like `serde_json::from_slice`: whitespace around the value is fine.
    let mut stack = Vec::new();
    match skip_value::<Scalar>(bytes, ws(bytes, 0), &mut stack) {
        Some(end) => ws(bytes, end) == bytes.len(),
        None => false,
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn scan_object_avx2<'a>(
    bytes: &'a [u8],
    stack: &mut Vec<u8>,
    member: &mut dyn FnMut(&'a [u8], &'a [u8]),
) -> bool {
    scan::<x86::Avx2>(bytes, stack, member)
}

/// Finding the bytes that end a run of plain string content.
trait StringSkip {
    /// Index just past the closing quote of the string whose content starts at `i`.
    fn skip_string(b: &[u8], i: usize) -> Option<usize>;
}

#[inline(always)]
fn scan<'a, S: StringSkip>(
    b: &'a [u8],
    stack: &mut Vec<u8>,
    member: &mut dyn FnMut(&'a [u8], &'a [u8]),
) -> bool {
    let n = b.len();
    if n < 2 || b[0] != b'{' {
        return false;
    }
    let mut i = ws(b, 1);
    if i < n && b[i] == b'}' {
        return i + 1 == n;
    }
    loop {
        if i >= n || b[i] != b'"' {
            return false;
        }
        let key_start = i;
        i = match S::skip_string(b, i + 1) {
            Some(j) => j,
            None => return false,
        };
        let key_end = i;
        i = ws(b, i);
        if i >= n || b[i] != b':' {
            return false;
        }
        i = ws(b, i + 1);
        let value_start = i;
        i = match skip_value::<S>(b, i, stack) {
            Some(j) => j,
            None => return false,
        };
        member(&b[key_start..key_end], &b[value_start..i]);
        i = ws(b, i);
        if i >= n {
            return false;
        }
        match b[i] {
            b',' => i = ws(b, i + 1),
            b'}' => return i + 1 == n,
            _ => return false,
        }
    }
}

/// The index of the first byte at or after `i` that is not JSON whitespace.
#[inline(always)]
pub(crate) fn ws(b: &[u8], mut i: usize) -> usize {
    while let Some(b' ' | b'\t' | b'\n' | b'\r') = b.get(i) {
        i += 1;
    }
    i
}

/// Skips one value starting at `i` (no leading whitespace); returns the index after it.
#[inline(always)]
fn skip_value<S: StringSkip>(b: &[u8], mut i: usize, stack: &mut Vec<u8>) -> Option<usize> {
    let n = b.len();
    stack.clear();
    loop {
        // Parse one value at `i`.
        match *b.get(i)? {
            b'"' => i = S::skip_string(b, i + 1)?,
            b'{' => {
                i = ws(b, i + 1);
                if b.get(i) == Some(&b'}') {
                    i += 1;
                } else {
                    stack.push(b'{');
                    i = key_colon::<S>(b, i)?;
                    continue;
                }
            }
            b'[' => {
                i = ws(b, i + 1);
                if b.get(i) == Some(&b']') {
                    i += 1;
                } else {
                    stack.push(b'[');
                    continue;
                }
            }
            b't' => i = literal(b, i, b"true")?,
            b'f' => i = literal(b, i, b"false")?,
            b'n' => i = literal(b, i, b"null")?,
            b'-' | b'0'..=b'9' => i = number(b, i)?,
            _ => return None,
        }
        // A value ended: close containers until one wants another element.
        loop {
            let Some(&top) = stack.last() else {
                return Some(i);
            };
            i = ws(b, i);
            if i >= n {
                return None;
            }
            match (b[i], top) {
                (b',', b'{') => {
                    i = key_colon::<S>(b, ws(b, i + 1))?;
                    break;
                }
                (b',', _) => {
                    i = ws(b, i + 1);
                    break;
                }
                (b'}', b'{') | (b']', b'[') => {
                    stack.pop();
                    i += 1;
                }
                _ => return None,
            }
        }
    }
}

/// Skips `"key"` `:` and the whitespace before the value.
#[inline(always)]
fn key_colon<S: StringSkip>(b: &[u8], i: usize) -> Option<usize> {
    if b.get(i) != Some(&b'"') {
        return None;
    }
    let i = ws(b, S::skip_string(b, i + 1)?);
    if b.get(i) != Some(&b':') {
        return None;
    }
    Some(ws(b, i + 1))
}

#[inline(always)]
fn literal(b: &[u8], i: usize, word: &[u8]) -> Option<usize> {
    if b.get(i..i + word.len())? == word {
        Some(i + word.len())
    } else {
        None
    }
}

/// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`
#[inline(always)]
fn number(b: &[u8], mut i: usize) -> Option<usize> {
    let digit = |i: usize| matches!(b.get(i), Some(b'0'..=b'9'));
    if b.get(i) == Some(&b'-') {
        i += 1;
    }
    match b.get(i)? {
        b'0' => {
            i += 1;
            if digit(i) {
                return None;
            }
        }
        b'1'..=b'9' => {
            while digit(i) {
                i += 1;
            }
        }
        _ => return None,
    }
    if b.get(i) == Some(&b'.') {
        i += 1;
        if !digit(i) {
            return None;
        }
        while digit(i) {
            i += 1;
        }
    }
    if let Some(b'e' | b'E') = b.get(i) {
        i += 1;
        if let Some(b'+' | b'-') = b.get(i) {
            i += 1;
        }
        if !digit(i) {
            return None;
        }
        while digit(i) {
            i += 1;
        }
    }
    Some(i)
}

/// Index after the escape at `p` (`b[p] == b'\\'`), if it is valid.
#[inline(always)]
fn escape_end(b: &[u8], p: usize) -> Option<usize> {
    match b.get(p + 1)? {
        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => Some(p + 2),
        b'u' => {
            let hex = b.get(p + 2..p + 6)?;
            if hex.iter().all(u8::is_ascii_hexdigit) {
                Some(p + 6)
            } else {
                None
            }
        }
        _ => None,
    }
}

/// Byte-at-a-time string skipping (tails of SIMD scans, other architectures).
#[inline(always)]
fn skip_string_scalar(b: &[u8], mut i: usize) -> Option<usize> {
    loop {
        match *b.get(i)? {
            b'"' => return Some(i + 1),
            b'\\' => i = escape_end(b, i)?,
            0..=0x1F => return None,
            _ => i += 1,
        }
    }
}

#[cfg(any(test, not(target_arch = "x86_64")))]
struct Scalar;

#[cfg(any(test, not(target_arch = "x86_64")))]
impl StringSkip for Scalar {
    #[inline(always)]
    fn skip_string(b: &[u8], i: usize) -> Option<usize> {
        skip_string_scalar(b, i)
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    use super::{StringSkip, escape_end, skip_string_scalar};

    /// Walks the special bytes (quote, backslash, control) of one block given their bit mask;
    /// `Ok(end)` when the string ends, `Err(Some(next))` to go on scanning at `next`.
    #[inline(always)]
    fn specials(b: &[u8], i: usize, mut mask: u32, width: usize) -> Result<usize, Option<usize>> {
        while mask != 0 {
            let p = i + mask.trailing_zeros() as usize;
            match b[p] {
                b'"' => return Ok(p + 1),
                b'\\' => {
                    let end = escape_end(b, p).ok_or(None)?;
                    let used = end - i;
                    if used >= width {
                        return Err(Some(end));
                    }
                    mask &= u32::MAX << used;
                }
                _ => return Err(None),
            }
        }
        Err(Some(i + width))
    }

    pub(super) struct Avx2;

    const ODD_BITS: u64 = 0xAAAA_AAAA_AAAA_AAAA;

    /// Bits of the characters escaped by a backslash in a 64-byte block (simdjson's escape
    /// scanner): runs of backslashes pair up, an odd run escapes the byte after it, and a run
    /// reaching the block's end carries into the next block through `next_is_escaped`.
    #[inline(always)]
    fn escaped_chars(backslash: u64, next_is_escaped: &mut u64) -> u64 {
        if backslash == 0 {
            return std::mem::take(next_is_escaped);
        }
        let potential_escape = backslash & !*next_is_escaped;
        let maybe_escaped = potential_escape << 1;
        let even_series_codes_and_odd_bits =
            (maybe_escaped | ODD_BITS).wrapping_sub(potential_escape);
        let escape_and_terminal_code = even_series_codes_and_odd_bits ^ ODD_BITS;
        let escaped = escape_and_terminal_code ^ (backslash | *next_is_escaped);
        let escape = escape_and_terminal_code & backslash;
        *next_is_escaped = escape >> 63;
        escaped
    }

    /// Nibble tables: a byte is a valid escape letter (`" / \\ b f n r t u`) when the entries
    /// of its high and low nibble share a bit.
    const ESCAPE_HI: [u8; 16] = [0, 0, 1, 0, 0, 2, 4, 8, 0, 0, 0, 0, 0, 0, 0, 0];
    const ESCAPE_LO: [u8; 16] = [0, 0, 13, 0, 8, 8, 4, 0, 0, 0, 0, 0, 2, 0, 4, 1];

    /// Quote, backslash and control-byte masks of one 32-byte half.
    #[inline(always)]
    unsafe fn half_masks(v: __m256i) -> (u64, u64, u64) {
        // SAFETY: callers are compiled with AVX2 (see `Avx2::skip_string`).
        unsafe {
            let quote = _mm256_cmpeq_epi8(v, _mm256_set1_epi8(b'"' as i8));
            let backslash = _mm256_cmpeq_epi8(v, _mm256_set1_epi8(b'\\' as i8));
            // v <= 0x1F unsigned  <=>  min(v, 0x1F) == v
            let control = _mm256_cmpeq_epi8(_mm256_min_epu8(v, _mm256_set1_epi8(0x1F)), v);
            let m = |x: __m256i| u64::from(_mm256_movemask_epi8(x) as u32);
            (m(quote), m(backslash), m(control))
        }
    }

    /// Valid-escape-letter and `u` masks of one 32-byte half (only for blocks with escapes).
    #[inline(always)]
    unsafe fn escape_masks(v: __m256i) -> (u64, u64) {
        // SAFETY: callers are compiled with AVX2 (see `Avx2::skip_string`).
        unsafe {
            let hi_table = _mm256_broadcastsi128_si256(_mm_loadu_si128(ESCAPE_HI.as_ptr().cast()));
            let lo_table = _mm256_broadcastsi128_si256(_mm_loadu_si128(ESCAPE_LO.as_ptr().cast()));
            let nibble = _mm256_set1_epi8(0x0F);
            let hi =
                _mm256_shuffle_epi8(hi_table, _mm256_and_si256(_mm256_srli_epi16(v, 4), nibble));
            let lo = _mm256_shuffle_epi8(lo_table, _mm256_and_si256(v, nibble));
            let invalid = _mm256_cmpeq_epi8(_mm256_and_si256(hi, lo), _mm256_setzero_si256());
            let u = _mm256_cmpeq_epi8(v, _mm256_set1_epi8(b'u' as i8));
            let m = |x: __m256i| u64::from(_mm256_movemask_epi8(x) as u32);
            (!m(invalid) & 0xFFFF_FFFF, m(u))
        }
    }

    impl StringSkip for Avx2 {
        #[inline(always)]
        fn skip_string(b: &[u8], mut i: usize) -> Option<usize> {
            // Most strings are short keys and ids, or long text without a backslash for a
            // while: find the first special byte 32 at a time, and only when it is a backslash
            // switch to the escape-aware scan below (no backslash before `i`, so it can start
            // there with nothing carried).
            // SAFETY: compiled with AVX2 (see `scan_object_avx2`); loads read b[i..i + 32].
            unsafe {
                let quote = _mm256_set1_epi8(b'"' as i8);
                let backslash = _mm256_set1_epi8(b'\\' as i8);
                let control_max = _mm256_set1_epi8(0x1F);
                loop {
                    if i + 32 > b.len() {
                        return skip_string_scalar(b, i);
                    }
                    let v = _mm256_loadu_si256(b.as_ptr().add(i).cast());
                    let is_quote = _mm256_cmpeq_epi8(v, quote);
                    let is_backslash = _mm256_cmpeq_epi8(v, backslash);
                    let is_control = _mm256_cmpeq_epi8(_mm256_min_epu8(v, control_max), v);
                    let special =
                        _mm256_or_si256(_mm256_or_si256(is_quote, is_backslash), is_control);
                    let mask = _mm256_movemask_epi8(special) as u32;
                    if mask == 0 {
                        i += 32;
                        continue;
                    }
                    let p = i + mask.trailing_zeros() as usize;
                    return match b[p] {
                        b'"' => Some(p + 1),
                        b'\\' => escaped_scan(b, p),
                        _ => None,
                    };
                }
            }
        }
    }

    /// The rest of a string from `i` (not inside an escape), 64 bytes at a time with the
    /// escape scanner.
    #[inline(always)]
    fn escaped_scan(b: &[u8], mut i: usize) -> Option<usize> {
        let mut next_is_escaped = 0u64;
        {
            let mut padded;
            loop {
                let block: &[u8] = if i + 64 <= b.len() {
                    &b[i..i + 64]
                } else if i < b.len() {
                    // Spaces after the end: never special, so an unterminated string runs
                    // into the next round and fails there.
                    padded = [b' '; 64];
                    padded[..b.len() - i].copy_from_slice(&b[i..]);
                    &padded
                } else {
                    return None;
                };
                // SAFETY: only reached from `scan_object_avx2`, compiled with AVX2 and called
                // after the CPU check; the loads read inside the 64-byte `block`.
                let (lo, hi) = unsafe {
                    (
                        _mm256_loadu_si256(block.as_ptr().cast()),
                        _mm256_loadu_si256(block.as_ptr().add(32).cast()),
                    )
                };
                // SAFETY: as above, AVX2 is present; `half_masks` only works on registers.
                let (q, bs, ctl) = unsafe {
                    let (l, h) = (half_masks(lo), half_masks(hi));
                    (l.0 | h.0 << 32, l.1 | h.1 << 32, l.2 | h.2 << 32)
                };
                let escaped = escaped_chars(bs, &mut next_is_escaped);
                let ends = q & !escaped;
                // Bits strictly before the closing quote (all 64 when it is not in this block).
                let inside = if ends == 0 {
                    u64::MAX
                } else {
                    (ends & ends.wrapping_neg()) - 1
                };
                if ctl & inside != 0 {
                    return None;
                }
                if escaped & inside != 0 {
                    // SAFETY: as above.
                    let (valid, u) = unsafe {
                        let (l, h) = (escape_masks(lo), escape_masks(hi));
                        (l.0 | h.0 << 32, l.1 | h.1 << 32)
                    };
                    if escaped & inside & !valid != 0 {
                        return None;
                    }
                    let mut unicode = escaped & inside & u;
                    while unicode != 0 {
                        let p = i + unicode.trailing_zeros() as usize;
                        let hex = b.get(p + 1..p + 5)?;
                        if !hex.iter().all(u8::is_ascii_hexdigit) {
                            return None;
                        }
                        unicode &= unicode - 1;
                    }
                }
                if ends != 0 {
                    return Some(i + ends.trailing_zeros() as usize + 1);
                }
                i += 64;
            }
        }
    }

    pub(super) struct Sse2;

    impl StringSkip for Sse2 {
        #[inline(always)]
        fn skip_string(b: &[u8], mut i: usize) -> Option<usize> {
            // SAFETY: SSE2 is part of the x86_64 baseline; loads read b[i..i + 16] in bounds.
            unsafe {
                let quote = _mm_set1_epi8(b'"' as i8);
                let backslash = _mm_set1_epi8(b'\\' as i8);
                let control_max = _mm_set1_epi8(0x1F);
                while i + 16 <= b.len() {
                    let v = _mm_loadu_si128(b.as_ptr().add(i).cast());
                    let is_quote = _mm_cmpeq_epi8(v, quote);
                    let is_backslash = _mm_cmpeq_epi8(v, backslash);
                    let is_control = _mm_cmpeq_epi8(_mm_min_epu8(v, control_max), v);
                    let special = _mm_or_si128(_mm_or_si128(is_quote, is_backslash), is_control);
                    let mask = _mm_movemask_epi8(special) as u32;
                    if mask == 0 {
                        i += 16;
                        continue;
                    }
                    match specials(b, i, mask, 16) {
                        Ok(end) => return Some(end),
                        Err(Some(next)) => i = next,
                        Err(None) => return None,
                    }
                }
            }
            skip_string_scalar(b, i)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn serde_ok(bytes: &[u8]) -> bool {
        serde_json::from_slice::<serde::de::IgnoredAny>(bytes).is_ok()
    }

    fn members(bytes: &[u8]) -> Option<Vec<(String, String)>> {
        let mut out = Vec::new();
        let mut stack = Vec::new();
        let ok = scan_object(bytes, &mut stack, &mut |k, v| {
            out.push((
                String::from_utf8_lossy(k).into_owned(),
                String::from_utf8_lossy(v).into_owned(),
            ))
        });
        ok.then_some(out)
    }

    #[test]
    fn reports_top_level_members() {
        let got =
            members(br#"{"a":1,"b":{"c":[true,false,null]},"d":"x\"y","e":-0.5e+3}"#).unwrap();
        let want = [
            ("\"a\"", "1"),
            ("\"b\"", r#"{"c":[true,false,null]}"#),
            ("\"d\"", r#""x\"y""#),
            ("\"e\"", "-0.5e+3"),
        ];
        assert_eq!(
            got,
            want.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<Vec<_>>()
        );
        assert_eq!(members(b"{}").unwrap(), vec![]);
        assert_eq!(members(b"{ \"k\" : [ ] , \"l\" : { } }").unwrap().len(), 2);
    }

    #[test]
    fn rejects_what_serde_rejects() {
        let bad: &[&[u8]] = &[
            b"{",
            b"{\"a\":}",
            b"{\"a\":1,}",
            b"{\"a\":01}",
            b"{\"a\":1.}",
            b"{\"a\":-}",
            b"{\"a\":\"\x01\"}",
            b"{\"a\":\"\\x\"}",
            b"{\"a\":\"\\u12G4\"}",
            b"{\"a\":[1,]}",
            b"{\"a\":tru}",
            b"{\"a\":1} ",
            b"[]",
            b"{\"a\" 1}",
            b"{\"a\":[1}",
            b"{\"a\":{\"b\":1]}",
        ];
        for case in bad {
            assert!(members(case).is_none(), "{}", String::from_utf8_lossy(case));
            assert!(
                !is_value(case) || serde_ok(case),
                "{}",
                String::from_utf8_lossy(case)
            );
        }
    }

    #[test]
    fn long_strings_with_escapes_at_block_edges() {
        for pad in 0..80 {
            let text = format!("{}\\n\\u00e9\\\"{}", "x".repeat(pad), "y".repeat(pad));
            let json = format!("{{\"k\":\"{text}\",\"z\":1}}");
            assert_eq!(
                members(json.as_bytes()).map(|m| m.len()),
                Some(2),
                "pad {pad}"
            );
            let broken = format!("{{\"k\":\"{}\\q\"}}", "x".repeat(pad));
            assert!(members(broken.as_bytes()).is_none(), "pad {pad}");
            let control = format!("{{\"k\":\"{}\t\"}}", "x".repeat(pad));
            assert!(members(control.as_bytes()).is_none(), "pad {pad}");
        }
    }

    #[test]
    fn deep_nesting_is_fine() {
        let deep = format!("{{\"a\":{}1{}}}", "[".repeat(5000), "]".repeat(5000));
        assert!(members(deep.as_bytes()).is_some());
        assert!(serde_json::from_str::<&serde_json::value::RawValue>(&deep).is_ok());
    }

    fn jsonish() -> impl Strategy<Value = Vec<u8>> {
        let atoms = prop::sample::select(vec![
            "{",
            "}",
            "[",
            "]",
            ",",
            ":",
            "\"",
            "\\",
            "\\n",
            "\\u00e9",
            "\\uZZ",
            "true",
            "false",
            "null",
            "nul",
            "0",
            "01",
            "-",
            "1.5",
            "1e5",
            "1E+",
            ".5",
            " ",
            "\t",
            "\"k\"",
            "\"v\"",
            "\"a\\\"b\"",
            "x",
            "é",
            "\u{1}",
        ]);
        prop::collection::vec(atoms, 0..40).prop_map(|parts| parts.concat().into_bytes())
    }

    fn object_like() -> impl Strategy<Value = Vec<u8>> {
        jsonish().prop_map(|inner| {
            let mut v = b"{\"k\":".to_vec();
            v.extend_from_slice(&inner);
            v.push(b'}');
            v
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]
        #[test]
        fn values_agree_with_serde(bytes in jsonish()) {
            prop_assert_eq!(is_value(&bytes), serde_ok(&bytes), "{}", String::from_utf8_lossy(&bytes));
        }

        #[test]
        fn objects_agree_with_serde(bytes in object_like()) {
            let mine = members(&bytes).is_some();
            let theirs = serde_ok(&bytes) && bytes.first() == Some(&b'{');
            prop_assert_eq!(mine, theirs, "{}", String::from_utf8_lossy(&bytes));
        }

        #[test]
        fn generated_values_are_accepted(value in arb_json(), pad in 0usize..70) {
            let mut text = serde_json::to_string(&serde_json::json!({"pad": "p".repeat(pad), "v": value})).unwrap();
            prop_assert!(members(text.as_bytes()).is_some(), "{}", text);
            text.pop();
            prop_assert!(members(text.as_bytes()).is_none());
        }
    }

    fn arb_json() -> impl Strategy<Value = serde_json::Value> {
        use serde_json::Value;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(Value::from),
            ".{0,40}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 32, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::btree_map(".{0,8}", inner, 0..6)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }
}
