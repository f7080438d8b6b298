//! The listing's order of records: newest first (`updated` descending, as text), records as
//! new as each other in their given order (id order), as `SessionSummary::sort_newest_first`
//! leaves them.
//!
//! A million string comparisons through a permutation miss the cache at every step, so when
//! every `updated` has the spelling the journal's timestamps have (`2026-11-29T14:34:34.757Z`,
//! whose text order is the order of its 17 digits read as one number), the positions are
//! sorted by that number instead; any other spelling sorts by the text, the referee
//! (`number_order_is_text_order`).

use super::record::IndexRecord;

/// The positions of `recs`, newest first, ties in position order.
pub(super) fn newest_first(recs: &[IndexRecord]) -> Vec<u32> {
    let keys: Option<Vec<u64>> = recs
        .iter()
        .map(|r| {
            r.updated
                .as_deref()
                .map_or(Some(0), |t| key(t).map(|k| k + 1))
        })
        .collect();
    match keys {
        Some(keys) => by_key(&keys),
        None => by_text(recs),
    }
}

/// Positions by key descending, ties by position: one sort of plain numbers.
fn by_key(keys: &[u64]) -> Vec<u32> {
    let mut packed: Vec<u128> = keys
        .iter()
        .enumerate()
        .map(|(i, &k)| (u128::from(u64::MAX - k) << 32) | i as u128)
        .collect();
    packed.sort_unstable();
    packed.into_iter().map(|p| p as u32).collect()
}

fn by_text(recs: &[IndexRecord]) -> Vec<u32> {
    let mut order: Vec<u32> = (0..recs.len() as u32).collect();
    // Stable: equal `updated` stay in position order.
    order.sort_by(|&a, &b| recs[b as usize].updated.cmp(&recs[a as usize].updated));
    order
}

/// The 17 digits of a timestamp spelt `YYYY-MM-DDTHH:MM:SS.mmmZ`, as one number; `None` for
/// any other spelling.
fn key(t: &str) -> Option<u64> {
    const SHAPE: &[u8; 24] = b"0000-00-00T00:00:00.000Z";
    let b = t.as_bytes();
    if b.len() != SHAPE.len() {
        return None;
    }
    let mut n = 0u64;
    for (&c, &s) in b.iter().zip(SHAPE) {
        if s == b'0' {
            if !c.is_ascii_digit() {
                return None;
            }
            n = n * 10 + u64::from(c - b'0');
        } else if c != s {
            return None;
        }
    }
    Some(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::record::tests::record;
    use proptest::prelude::*;

    fn updated() -> impl Strategy<Value = Option<String>> {
        prop_oneof![
            Just(None),
            // Few distinct times, so that ties are common.
            (2025u32..2027, 1u32..3, 0u32..3)
                .prop_map(|(y, m, ms)| Some(format!("{y:04}-{m:02}-29T14:34:34.{ms:03}Z"))),
        ]
    }

    proptest! {
        #[test]
        fn number_order_is_text_order(times in proptest::collection::vec(updated(), 0..200), odd in any::<bool>()) {
            let mut recs: Vec<IndexRecord> = times
                .into_iter()
                .enumerate()
                .map(|(i, t)| {
                    let mut r = record(i as u128);
                    r.updated = t;
                    r
                })
                .collect();
            if odd && !recs.is_empty() {
                // One time spelt otherwise: the whole order falls back to the text.
                recs[0].updated = Some("2026-11-29 14:34:34Z".into());
            }
            prop_assert_eq!(newest_first(&recs), by_text(&recs));
        }
    }

    #[test]
    fn only_the_journals_spelling_has_a_number() {
        assert_eq!(key("2026-11-29T14:34:34.757Z"), Some(20261129143434757));
        assert_eq!(key("2026-11-29T14:34:34.75Z"), None);
        assert_eq!(key("2026-11-29T14:34:34,757Z"), None);
        assert_eq!(key("2026-1a-29T14:34:34.757Z"), None);
    }
}
