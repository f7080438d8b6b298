//! UTF-8 validation at SIMD speed.
//!
//! The audit must reject exactly the lines `serde_json` rejects, and that includes invalid UTF-8
//! anywhere in a line. `std::str::from_utf8` runs at about 3 GB/s on text with some non-ASCII in
//! it, which alone would cost more than `grep -c` takes for the whole job; `simdutf8` (the
//! lookup-table algorithm of Keiser and Lemire, as in simdjson) checks 32 or 64 bytes per step
//! whatever the content, picking AVX2, SSE4.2 or NEON at run time. Measured here on a 400 MB
//! journal it is as fast as the hand-written AVX2 validator it replaced (see
//! `docs/performance.md`); the property tests below hold it to std's verdict.

/// True when `bytes` is valid UTF-8 (same verdict as `std::str::from_utf8`).
pub(crate) fn is_valid(bytes: &[u8]) -> bool {
    simdutf8::basic::from_utf8(bytes).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_cases() {
        let cases: &[&[u8]] = &[
            b"",
            b"plain ascii",
            "café 東京 🚀".as_bytes(),
            b"\xC3\x28",
            b"\xE2\x82",
            b"\xF0\x9F\x98",
            b"\xED\xA0\x80",
            b"\xC0\xAF",
            b"\xF4\x90\x80\x80",
            b"\x80",
            b"\xFF",
        ];
        for case in cases {
            assert_eq!(
                is_valid(case),
                std::str::from_utf8(case).is_ok(),
                "{case:?}"
            );
        }
    }

    #[test]
    fn cut_sequences_at_every_block_position() {
        let euro = "€".as_bytes();
        for pad in 0..70 {
            let mut v = vec![b'a'; pad];
            v.extend_from_slice(euro);
            assert!(is_valid(&v), "pad {pad}");
            v.pop();
            assert!(!is_valid(&v), "cut at pad {pad}");
            v.extend_from_slice(b"0123456789012345678901234567890123456789");
            assert!(!is_valid(&v), "cut then ascii at pad {pad}");
        }
    }

    fn utf8ish() -> impl Strategy<Value = Vec<u8>> {
        let piece = prop_oneof![
            any::<char>().prop_map(|c| c.to_string().into_bytes()),
            Just(b"abcdefghijklmnopqrstuvwxyz0123456789".to_vec()),
            any::<u8>().prop_map(|b| vec![b]),
            prop::collection::vec(0x80u8..=0xFF, 1..4),
        ];
        prop::collection::vec(piece, 0..80).prop_map(|parts| parts.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        #[test]
        fn agrees_with_std(bytes in utf8ish()) {
            prop_assert_eq!(is_valid(&bytes), std::str::from_utf8(&bytes).is_ok());
        }

        #[test]
        fn agrees_with_std_on_random_bytes(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
            prop_assert_eq!(is_valid(&bytes), std::str::from_utf8(&bytes).is_ok());
        }
    }
}
