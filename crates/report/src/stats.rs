//! The first pass: the few numbers per turn that the page needs before it draws any turn
//! (the longest turn sets the bars' scale, the token chart sits above the timeline, the lanes
//! set the grid). 24 bytes a turn.

use crate::items::{Item, Lane, MarkKind};

/// One turn's numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TurnStat {
    /// Start to end, in milliseconds.
    pub total_ms: u64,
    /// Output tokens recorded for the turn.
    pub output_tokens: Option<u64>,
    /// Index into [`Stats::lanes`].
    pub lane: u32,
}

/// What the first pass collects.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Stats {
    /// Turns in the order they ended.
    pub turns: Vec<TurnStat>,
    /// Lanes in order of first appearance; the main agent's (`None`) is always first.
    pub lanes: Vec<Lane>,
    /// The longest turn, in milliseconds.
    pub max_turn_ms: u64,
    /// Crashes seen (a resume after a process that did not shut down).
    pub crashes: u64,
    /// Lines the reader could not read or whose data does not fit their type.
    pub unreadable: u64,
}

impl Stats {
    /// Empty stats with the main lane.
    pub fn new() -> Self {
        Stats {
            lanes: vec![None],
            ..Stats::default()
        }
    }

    /// Counts one item.
    pub fn add(&mut self, item: &Item) {
        match item {
            Item::Turn(turn) => {
                let lane = self.lane_index(&turn.lane);
                self.max_turn_ms = self.max_turn_ms.max(turn.total_ms);
                self.turns.push(TurnStat {
                    total_ms: turn.total_ms,
                    output_tokens: turn.output_tokens,
                    lane,
                });
            }
            Item::Mark(mark) => {
                self.lane_index(&mark.lane);
                match mark.kind {
                    MarkKind::Crash => self.crashes += 1,
                    MarkKind::Unreadable | MarkKind::Oversized => self.unreadable += 1,
                    _ => {}
                }
            }
        }
    }

    /// The index of `lane`, added when new.
    pub fn lane_index(&mut self, lane: &Lane) -> u32 {
        let i = match self.lanes.iter().position(|l| l == lane) {
            Some(i) => i,
            None => {
                self.lanes.push(lane.clone());
                self.lanes.len() - 1
            }
        };
        u32::try_from(i).unwrap_or(u32::MAX)
    }

    /// The 1-based grid column of `lane` (lanes unknown to the first pass share the last one).
    pub fn column(&self, lane: &Lane) -> usize {
        self.lanes
            .iter()
            .position(|l| l == lane)
            .unwrap_or(self.lanes.len().saturating_sub(1))
            + 1
    }
}
