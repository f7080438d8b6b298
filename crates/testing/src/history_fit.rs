//! How a journal kept the main agent's history in its window: each compaction's outcome
//! and each truncation's count of removed messages, in order. The behaviour profile compares
//! these apart from the facts: the runtime compacts behind a turn and the replay before the
//! call that first carries the summary, so the events stand at different places in the two
//! journals while the model sees the same history.

use std::fmt;

use serde_json::Value;

use crate::journal::JournalLine;

/// The compactions and truncations of one journal's main agent.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HistoryFit {
    /// Each finished compaction (`session.compaction_complete`): whether it succeeded.
    pub compactions: Vec<bool>,
    /// Each `session.truncation`: its `messagesRemovedDuringTruncation`.
    pub truncations: Vec<u64>,
    /// Index of the first of those lines.
    pub first: Option<usize>,
}

impl HistoryFit {
    /// Reads them off `lines`.
    pub fn of(lines: &[JournalLine]) -> Self {
        let mut fit = HistoryFit::default();
        for (index, line) in lines.iter().enumerate() {
            if !line.is_top_level() {
                continue;
            }
            let data = || line.data();
            match line.event_type() {
                "session.compaction_complete" => {
                    fit.compactions.push(data()["success"] == Value::Bool(true));
                }
                "session.truncation" => {
                    let removed = data()["messagesRemovedDuringTruncation"].as_u64();
                    fit.truncations.push(removed.unwrap_or(0));
                }
                _ => continue,
            }
            fit.first.get_or_insert(index);
        }
        fit
    }

    /// Whether both kept their history alike (where each stands is not compared).
    pub fn same_as(&self, other: &HistoryFit) -> bool {
        self.compactions == other.compactions && self.truncations == other.truncations
    }
}

impl fmt::Display for HistoryFit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let outcomes: Vec<&str> = self
            .compactions
            .iter()
            .map(|ok| if *ok { "succeeded" } else { "failed" })
            .collect();
        let counts: Vec<String> = self.truncations.iter().map(u64::to_string).collect();
        write!(
            f,
            "{} compaction{} ({}) and {} truncation{} ({} messages)",
            outcomes.len(),
            if outcomes.len() == 1 { "" } else { "s" },
            outcomes.join(", "),
            counts.len(),
            if counts.len() == 1 { "" } else { "s" },
            counts.join(", "),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use turnstile_journal::Event;

    fn line(number: u64, event_type: &str, data: Value, agent: Option<&str>) -> JournalLine {
        let raw = serde_json::value::to_raw_value(&data).unwrap();
        let mut event = Event::with_raw_data(event_type.into(), raw, None);
        event.agent_id = agent.map(str::to_owned);
        JournalLine {
            number,
            event,
            text: String::new(),
        }
    }

    #[test]
    fn outcomes_and_counts_are_compared_not_places() {
        let compacted = |n, ok| line(n, "session.compaction_complete", json(ok), None);
        let truncated = |n, removed| {
            line(
                n,
                "session.truncation",
                serde_json::json!({"messagesRemovedDuringTruncation": removed}),
                None,
            )
        };
        let recorded = HistoryFit::of(&[
            line(1, "user.message", serde_json::json!({}), None),
            compacted(2, false),
            truncated(3, 4),
            // A sub-agent's are not the main agent's history.
            line(
                4,
                "session.truncation",
                serde_json::json!({"messagesRemovedDuringTruncation": 9}),
                Some("call_1"),
            ),
        ]);
        assert_eq!(recorded.first, Some(1));
        let replayed = HistoryFit::of(&[truncated(1, 4), compacted(2, false)]);
        assert!(recorded.same_as(&replayed), "{recorded} / {replayed}");
        let other = HistoryFit::of(&[compacted(1, true), truncated(2, 4)]);
        assert!(!recorded.same_as(&other));
        assert_eq!(
            other.to_string(),
            "1 compaction (succeeded) and 1 truncation (4 messages)"
        );
        assert!(!recorded.same_as(&HistoryFit::default()));
    }

    fn json(ok: bool) -> Value {
        serde_json::json!({"success": ok})
    }
}
