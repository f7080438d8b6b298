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
    scan_object_nested(bytes, stack, member, None)
}

/// A member whose members are reported too: its raw key (with its quotes) and the callback
/// that gets the members of its value when that is an object.
pub(crate) type Nested<'n, 'a> = (&'n [u8], &'n mut dyn FnMut(&'a [u8], &'a [u8]));

/// [`scan_object`], and for the top-level member named by `nested` (by its raw key) whose value
/// is an object, that object's members too, found in the same pass.
pub(crate) fn scan_object_nested<'a>(
    bytes: &'a [u8],
    stack: &mut Vec<u8>,
    member: &mut dyn FnMut(&'a [u8], &'a [u8]),
    nested: Option<Nested<'_, 'a>>,
) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2, checked just above.
            return unsafe { scan_object_avx2(bytes, stack, member, nested) };
        }
        scan::<x86::Sse2>(bytes, stack, member, nested)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        scan::<Scalar>(bytes, stack, member, nested)
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
    nested: Option<Nested<'_, 'a>>,
) -> bool {
    scan::<x86::Avx2>(bytes, stack, member, nested)
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
    nested: Option<Nested<'_, 'a>>,
) -> bool {
    object::<S, true>(b, 0, stack, member, nested) == Some(b.len())
}

/// Walks the object at `b[i]`, calling `member` for each of its members (and with `NESTED`,
/// `nested` as [`scan_object_nested`] says); the index after it. (Two instances rather than a
/// recursive call, so that both are inlined where the SIMD features are enabled.)
#[inline(always)]
fn object<'a, S: StringSkip, const NESTED: bool>(
    b: &'a [u8],
    mut i: usize,
    stack: &mut Vec<u8>,
    member: &mut dyn FnMut(&'a [u8], &'a [u8]),
    mut nested: Option<Nested<'_, 'a>>,
) -> Option<usize> {
    let n = b.len();
    if n < i + 2 || b[i] != b'{' {
        return None;
    }
    i = ws(b, i + 1);
    if i < n && b[i] == b'}' {
        return Some(i + 1);
    }
    loop {
        if i >= n || b[i] != b'"' {
            return None;
        }
        let key_start = i;
        i = S::skip_string(b, i + 1)?;
        let key_end = i;
        i = ws(b, i);
        if i >= n || b[i] != b':' {
            return None;
        }
        i = ws(b, i + 1);
        let value_start = i;
        i = match &mut nested {
            Some((key, inner))
                if NESTED && b.get(i) == Some(&b'{') && &b[key_start..key_end] == *key =>
            {
                object::<S, false>(b, i, stack, *inner, None)?
            }
            _ => skip_value::<S>(b, i, stack)?,
        };
        member(&b[key_start..key_end], &b[value_start..i]);
        i = ws(b, i);
        if i >= n {
            return None;
        }
        match b[i] {
            b',' => i = ws(b, i + 1),
            b'}' => return Some(i + 1),
            _ => return None,
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
mod x86;

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
        fn nested_members_change_nothing_else(bytes in object_like()) {
            let mut stack = Vec::new();
            let mut top = Vec::new();
            let mut inner = Vec::new();
            let ok = scan_object_nested(
                &bytes,
                &mut stack,
                &mut |k, v| top.push((k.to_vec(), v.to_vec())),
                Some((b"\"k\"", &mut |k, v| inner.push((k.to_vec(), v.to_vec())))),
            );
            let theirs = serde_ok(&bytes) && bytes.first() == Some(&b'{');
            prop_assert_eq!(ok, theirs, "{}", String::from_utf8_lossy(&bytes));
            if ok {
                let mut plain = Vec::new();
                prop_assert!(scan_object(&bytes, &mut stack, &mut |k, v| plain.push((k.to_vec(), v.to_vec()))));
                prop_assert_eq!(&top, &plain);
                // The nested members are those of each object value of the key, as a scan of
                // it alone finds them.
                let mut alone = Vec::new();
                for (_, value) in top.iter().filter(|(k, v)| k == b"\"k\"" && v.first() == Some(&b'{')) {
                    prop_assert!(scan_object(value, &mut stack, &mut |k, v| alone.push((k.to_vec(), v.to_vec()))));
                }
                prop_assert_eq!(&inner, &alone);
            }
        }

        #[test]
        fn generated_nested_members_are_found(value in arb_json(), pad in 0usize..70) {
            let text = serde_json::to_string(&serde_json::json!({"pad": "p".repeat(pad), "k": value, "z": [value]})).unwrap();
            let mut stack = Vec::new();
            let mut inner = Vec::new();
            let ok = scan_object_nested(
                text.as_bytes(),
                &mut stack,
                &mut |_, _| (),
                Some((b"\"k\"", &mut |k, v| inner.push((k.to_vec(), v.to_vec())))),
            );
            prop_assert!(ok);
            let mut alone = Vec::new();
            let raw = serde_json::to_string(&value).unwrap();
            if raw.starts_with('{') {
                prop_assert!(scan_object(raw.as_bytes(), &mut stack, &mut |k, v| alone.push((k.to_vec(), v.to_vec()))));
            }
            prop_assert_eq!(inner, alone);
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
