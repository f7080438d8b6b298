//! The scale every bar of the page is drawn against: the largest value, unless it lies far
//! beyond the rest, when the scale stops at the 95th percentile and the few bars beyond it are
//! drawn full length and marked as over the scale. One 2.4 s turn among 100 ms turns would
//! otherwise shrink every other bar to a sliver.

/// The percentile the scale stops at when the largest value is an outlier.
pub const CAP_PERCENTILE: usize = 95;
/// The largest value is an outlier when it is more than this many times the percentile.
pub const OUTLIER_FACTOR: u64 = 2;

/// A linear scale from 0 to [`Scale::top`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scale {
    /// The value drawn full length (at least 1).
    pub top: u64,
    /// The largest value.
    pub max: u64,
}

/// Where a value lands on a [`Scale`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Share {
    /// Fraction of the full length, 0 to 1.
    pub fraction: f64,
    /// Whether the value is beyond the scale (drawn full length and marked).
    pub over: bool,
}

impl Scale {
    /// The scale for `values`.
    pub fn of(values: impl IntoIterator<Item = u64>) -> Scale {
        let mut sorted: Vec<u64> = values.into_iter().collect();
        sorted.sort_unstable();
        let Some(&max) = sorted.last() else {
            return Scale { top: 1, max: 0 };
        };
        // The nearest-rank percentile: at most 5 % of the values lie above it.
        let rank = (sorted.len() - 1) * CAP_PERCENTILE / 100;
        let percentile = sorted[rank];
        let top = if percentile > 0 && max > percentile.saturating_mul(OUTLIER_FACTOR) {
            percentile
        } else {
            max
        };
        Scale {
            top: top.max(1),
            max,
        }
    }

    /// Whether some values are beyond the scale.
    pub fn capped(&self) -> bool {
        self.max > self.top
    }

    /// Where `value` lands.
    pub fn share(&self, value: u64) -> Share {
        if value > self.top {
            Share {
                fraction: 1.0,
                over: true,
            }
        } else {
            Share {
                fraction: value as f64 / self.top as f64,
                over: false,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn one_outlier_does_not_set_the_scale() {
        let mut turns = vec![100; 40];
        turns.push(2400);
        let scale = Scale::of(turns);
        assert_eq!((scale.top, scale.max), (100, 2400));
        assert!(scale.capped());
        assert_eq!(scale.share(50).fraction, 0.5);
        assert!(scale.share(2400).over && !scale.share(100).over);
    }

    #[test]
    fn values_close_together_use_the_largest() {
        let scale = Scale::of([10, 12, 15, 19]);
        assert_eq!(scale.top, 19);
        assert!(!scale.capped());
        assert_eq!(Scale::of([]).top, 1);
        assert_eq!(
            Scale::of([0, 0, 0, 5000]).top,
            5000,
            "nothing to keep visible"
        );
    }

    proptest! {
        #[test]
        fn about_one_in_twenty_at_most_is_over_and_every_share_fits(values in proptest::collection::vec(0u64..100_000, 1..300)) {
            let scale = Scale::of(values.clone());
            let over = values.iter().filter(|&&v| scale.share(v).over).count();
            // Over the scale: only values above the percentile's rank, one in twenty at most.
            let allowed = (values.len() - 1) - (values.len() - 1) * CAP_PERCENTILE / 100;
            prop_assert!(over <= allowed, "{over} of {}", values.len());
            prop_assert!(scale.max == *values.iter().max().unwrap());
            for v in values {
                let s = scale.share(v);
                prop_assert!((0.0..=1.0).contains(&s.fraction));
            }
        }
    }
}
