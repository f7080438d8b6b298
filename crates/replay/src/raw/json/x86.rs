//! The SIMD string skipping of the JSON validator on x86_64: SSE2 (the baseline) 16 bytes a
//! step, AVX2 32 bytes a step until a backslash, then 64 a step with simdjson's escape
//! scanner.

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
    let even_series_codes_and_odd_bits = (maybe_escaped | ODD_BITS).wrapping_sub(potential_escape);
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
        let hi = _mm256_shuffle_epi8(hi_table, _mm256_and_si256(_mm256_srli_epi16(v, 4), nibble));
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
                let special = _mm256_or_si256(_mm256_or_si256(is_quote, is_backslash), is_control);
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
