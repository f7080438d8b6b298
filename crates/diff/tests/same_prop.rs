//! Property: a journal against itself (under other ids, times and directories) is always the
//! same; one change at a random turn is reported at that turn.

use proptest::prelude::*;
use turnstile_diff::DivergenceKind;

use crate::common::session::{Change, Session};
use crate::generated::compare;

fn change(kind: u8, turn: u64) -> Change {
    match kind % 4 {
        0 => Change::ToolResult(turn),
        1 => Change::Arguments(turn),
        2 => Change::RemoveTurn(turn),
        _ => Change::AddEvent(turn),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn a_session_against_itself_is_the_same(turns in 1u64..60, a in 1u64..1000, b in 1u64..1000) {
        let report = compare(&Session::new(a, turns), &Session::new(b, turns));
        prop_assert!(report.same, "{}", report);
        prop_assert_eq!(report.compared.llm_calls, turns);
    }

    #[test]
    fn one_change_is_reported_at_its_turn(turns in 2u64..60, at in 0u64..1000, kind in 0u8..4, flip in any::<bool>()) {
        let turn = 1 + at % (turns - 1);
        let changed = Session::new(2, turns).with(change(kind, turn));
        let plain = Session::new(1, turns);
        let report = if flip { compare(&changed, &plain) } else { compare(&plain, &changed) };
        let first = report.divergence.clone();
        prop_assert!(first.is_some(), "{}", report);
        let first = first.unwrap();
        prop_assert_ne!(first.kind, DivergenceKind::AEnds);
        prop_assert_ne!(first.kind, DivergenceKind::BEnds);
        let (changed_side, plain_side) = if flip { (&first.a, &first.b) } else { (&first.b, &first.a) };
        prop_assert_eq!(changed_side.as_ref().map(|s| s.place.llm_call), Some(turn), "{}", report);
        // An added event is met by the start of the next call on the other side.
        let plain = plain_side.as_ref().map(|s| s.place.llm_call);
        let next = u64::from(matches!(change(kind, turn), Change::AddEvent(_)));
        prop_assert_eq!(plain, Some(turn + next), "{}", report);
    }
}
