//! UTF-8 validation at SIMD speed.
//!
//! The audit must reject exactly the lines `serde_json` rejects, and that includes invalid UTF-8
//! anywhere in a line. `std::str::from_utf8` runs at about 3 GB/s on text with some non-ASCII in
//! it, which alone would cost more than `grep -c` takes for the whole job; the lookup-table
//! algorithm of Keiser and Lemire ("Validating UTF-8 in less than one instruction per byte",
//! 2021, as in simdjson and simdutf8) checks 32 bytes in about 15 AVX2 instructions whatever the
//! content. Without AVX2 this falls back to std.

/// True when `bytes` is valid UTF-8 (same verdict as `std::str::from_utf8`).
pub(crate) fn is_valid(bytes: &[u8]) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2, checked just above.
            return unsafe { avx2::validate(bytes) };
        }
    }
    std::str::from_utf8(bytes).is_ok()
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    // Error bits of the lookup tables (names as in the paper).
    const TOO_SHORT: u8 = 1 << 0; // 11______ followed by 0_______ or 11______
    const TOO_LONG: u8 = 1 << 1; // 0_______ followed by 10______
    const OVERLONG_3: u8 = 1 << 2; // 11100000 100_____
    const TOO_LARGE: u8 = 1 << 3; // 11110100 1001____ and above
    const SURROGATE: u8 = 1 << 4; // 11101101 101_____
    const OVERLONG_2: u8 = 1 << 5; // 1100000_ 10______
    const TOO_LARGE_1000: u8 = 1 << 6; // 11110101 1000____ and above
    const OVERLONG_4: u8 = 1 << 6; // 11110000 1000____
    const TWO_CONTS: u8 = 1 << 7; // 10______ 10______
    const CARRY: u8 = TOO_SHORT | TOO_LONG | TWO_CONTS;

    const BYTE_1_HIGH: [u8; 16] = [
        TOO_LONG,
        TOO_LONG,
        TOO_LONG,
        TOO_LONG,
        TOO_LONG,
        TOO_LONG,
        TOO_LONG,
        TOO_LONG,
        TWO_CONTS,
        TWO_CONTS,
        TWO_CONTS,
        TWO_CONTS,
        TOO_SHORT | OVERLONG_2,
        TOO_SHORT,
        TOO_SHORT | OVERLONG_3 | SURROGATE,
        TOO_SHORT | TOO_LARGE | TOO_LARGE_1000 | OVERLONG_4,
    ];

    const BYTE_1_LOW: [u8; 16] = [
        CARRY | OVERLONG_3 | OVERLONG_2 | OVERLONG_4,
        CARRY | OVERLONG_2,
        CARRY,
        CARRY,
        CARRY | TOO_LARGE,
        CARRY | TOO_LARGE | TOO_LARGE_1000,
        CARRY | TOO_LARGE | TOO_LARGE_1000,
        CARRY | TOO_LARGE | TOO_LARGE_1000,
        CARRY | TOO_LARGE | TOO_LARGE_1000,
        CARRY | TOO_LARGE | TOO_LARGE_1000,
        CARRY | TOO_LARGE | TOO_LARGE_1000,
        CARRY | TOO_LARGE | TOO_LARGE_1000,
        CARRY | TOO_LARGE | TOO_LARGE_1000,
        CARRY | TOO_LARGE | TOO_LARGE_1000 | SURROGATE,
        CARRY | TOO_LARGE | TOO_LARGE_1000,
        CARRY | TOO_LARGE | TOO_LARGE_1000,
    ];

    const BYTE_2_HIGH: [u8; 16] = [
        TOO_SHORT,
        TOO_SHORT,
        TOO_SHORT,
        TOO_SHORT,
        TOO_SHORT,
        TOO_SHORT,
        TOO_SHORT,
        TOO_SHORT,
        TOO_LONG | OVERLONG_2 | TWO_CONTS | OVERLONG_3 | TOO_LARGE_1000 | OVERLONG_4,
        TOO_LONG | OVERLONG_2 | TWO_CONTS | OVERLONG_3 | TOO_LARGE,
        TOO_LONG | OVERLONG_2 | TWO_CONTS | SURROGATE | TOO_LARGE,
        TOO_LONG | OVERLONG_2 | TWO_CONTS | SURROGATE | TOO_LARGE,
        TOO_SHORT,
        TOO_SHORT,
        TOO_SHORT,
        TOO_SHORT,
    ];

    #[inline(always)]
    unsafe fn table(t: &[u8; 16]) -> __m256i {
        // SAFETY: 16 readable bytes; the same table in both 128-bit lanes for vpshufb.
        unsafe {
            let lane = _mm_loadu_si128(t.as_ptr().cast());
            _mm256_broadcastsi128_si256(lane)
        }
    }

    #[inline(always)]
    unsafe fn high_nibbles(v: __m256i) -> __m256i {
        unsafe { _mm256_and_si256(_mm256_srli_epi16(v, 4), _mm256_set1_epi8(0x0F)) }
    }

    /// The 32 bytes ending `N` bytes before the end of `input` (with `prev` in front).
    #[inline(always)]
    unsafe fn prev<const N: i32>(input: __m256i, prev: __m256i) -> __m256i {
        unsafe {
            let joined = _mm256_permute2x128_si256(prev, input, 0x21);
            match N {
                1 => _mm256_alignr_epi8(input, joined, 15),
                2 => _mm256_alignr_epi8(input, joined, 14),
                _ => _mm256_alignr_epi8(input, joined, 13),
            }
        }
    }

    /// Error bits of one block given the block before it.
    #[inline(always)]
    unsafe fn check_block(input: __m256i, prev_input: __m256i, t: &Tables) -> __m256i {
        unsafe {
            let prev1 = prev::<1>(input, prev_input);
            let byte_1_high = _mm256_shuffle_epi8(t.byte_1_high, high_nibbles(prev1));
            let byte_1_low = _mm256_shuffle_epi8(
                t.byte_1_low,
                _mm256_and_si256(prev1, _mm256_set1_epi8(0x0F)),
            );
            let byte_2_high = _mm256_shuffle_epi8(t.byte_2_high, high_nibbles(input));
            let special = _mm256_and_si256(_mm256_and_si256(byte_1_high, byte_1_low), byte_2_high);
            let prev2 = prev::<2>(input, prev_input);
            let prev3 = prev::<3>(input, prev_input);
            // Only 111_____ (third byte due) and 1111____ (fourth byte due) reach 0x80.
            let third = _mm256_subs_epu8(prev2, _mm256_set1_epi8((0xE0u8 - 0x80) as i8));
            let fourth = _mm256_subs_epu8(prev3, _mm256_set1_epi8((0xF0u8 - 0x80) as i8));
            let must_be_cont = _mm256_and_si256(
                _mm256_or_si256(third, fourth),
                _mm256_set1_epi8(0x80u8 as i8),
            );
            _mm256_xor_si256(must_be_cont, special)
        }
    }

    /// Nonzero where the block ends inside a multi-byte sequence.
    #[inline(always)]
    unsafe fn incomplete(input: __m256i) -> __m256i {
        unsafe {
            let mut max = [0xFFu8; 32];
            max[29] = 0xF0 - 1;
            max[30] = 0xE0 - 1;
            max[31] = 0xC0 - 1;
            _mm256_subs_epu8(input, _mm256_loadu_si256(max.as_ptr().cast()))
        }
    }

    struct Tables {
        byte_1_high: __m256i,
        byte_1_low: __m256i,
        byte_2_high: __m256i,
    }

    /// Validates `bytes` as UTF-8.
    ///
    /// # Safety
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn validate(bytes: &[u8]) -> bool {
        // SAFETY (whole body): loads stay inside `bytes` (i + 32 <= len) or a local buffer.
        unsafe {
            let t = Tables {
                byte_1_high: table(&BYTE_1_HIGH),
                byte_1_low: table(&BYTE_1_LOW),
                byte_2_high: table(&BYTE_2_HIGH),
            };
            let len = bytes.len();
            let mut error = _mm256_setzero_si256();
            let mut prev_input = _mm256_setzero_si256();
            let mut prev_incomplete = _mm256_setzero_si256();
            let mut i = 0;
            // Two blocks per round: ASCII text (most of a journal) costs one test per 64 bytes.
            while i + 64 <= len {
                let a = _mm256_loadu_si256(bytes.as_ptr().add(i).cast());
                let b = _mm256_loadu_si256(bytes.as_ptr().add(i + 32).cast());
                if _mm256_movemask_epi8(_mm256_or_si256(a, b)) == 0 {
                    error = _mm256_or_si256(error, prev_incomplete);
                    prev_incomplete = _mm256_setzero_si256();
                } else {
                    error = _mm256_or_si256(error, check_block(a, prev_input, &t));
                    error = _mm256_or_si256(error, check_block(b, a, &t));
                    prev_incomplete = incomplete(b);
                }
                prev_input = b;
                i += 64;
            }
            while i + 32 <= len {
                let input = _mm256_loadu_si256(bytes.as_ptr().add(i).cast());
                if _mm256_movemask_epi8(input) == 0 {
                    // ASCII block: fine unless the previous block left a sequence open.
                    error = _mm256_or_si256(error, prev_incomplete);
                    prev_incomplete = _mm256_setzero_si256();
                } else {
                    error = _mm256_or_si256(error, check_block(input, prev_input, &t));
                    prev_incomplete = incomplete(input);
                }
                prev_input = input;
                i += 32;
            }
            if i < len {
                // Zero padding is ASCII, so a sequence cut by the end shows up as TOO_SHORT.
                let mut last = [0u8; 32];
                last[..len - i].copy_from_slice(&bytes[i..]);
                let input = _mm256_loadu_si256(last.as_ptr().cast());
                error = _mm256_or_si256(error, check_block(input, prev_input, &t));
            } else {
                error = _mm256_or_si256(error, prev_incomplete);
            }
            _mm256_testz_si256(error, error) == 1
        }
    }
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
