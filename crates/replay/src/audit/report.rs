//! [`AuditReport`]: what an audit found, as JSON (camelCase) and as a short table.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::open_work::{Abandoned, OpenWork};
use crate::state::{TaskCompletion, ToolOutcomes};
use crate::tracking::AbandonedCounts;

/// Violations kept with their details; the rest are only counted.
pub const MAX_VIOLATIONS: usize = 1000;

/// The result of auditing one journal.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditReport {
    /// The journal audited.
    pub path: String,
    /// Its size in bytes (when the audit started).
    pub bytes: u64,
    /// Lines read (valid or not).
    pub lines: u64,
    /// Lines that are valid events.
    pub events: u64,
    /// Every LLM call the journal records, of every kind (the sum of [`Self::llm_call_kinds`]).
    #[serde(default)]
    pub llm_calls: u64,
    /// Each kind of LLM call, with its count and the events it was counted by.
    #[serde(default)]
    pub llm_call_kinds: Vec<LlmCallKind>,
    /// `assistant.turn_start` events: LLM calls with turn events, the sub-agents' included.
    pub turns: u64,
    /// The sub-agents' LLM calls (their share of `turns`), by `agentId`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub agent_turns: BTreeMap<String, u64>,
    /// LLM calls of sub-agents recorded without turn events (the Copilot CLI's), one per
    /// `assistant.message` outside a turn of its agent, by `agentId`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub agent_answer_calls: BTreeMap<String, u64>,
    /// Events by top-level type.
    pub by_type: BTreeMap<String, u64>,
    /// User messages typed by a person or client.
    pub user_messages: u64,
    /// User messages injected by autopilot.
    pub autopilot_continuations: u64,
    /// Finished tool calls by tool name.
    pub tool_calls: BTreeMap<String, ToolOutcomes>,
    /// The last `session.task_complete`, or null.
    pub task_complete: Option<TaskCompletion>,
    /// `session.error` events.
    pub errors: u64,
    /// `abort` events.
    pub aborts: u64,
    /// `session.resume` events.
    pub resumes: u64,
    /// `session.compaction_start` events: summary calls to the model (LLM calls besides turns).
    #[serde(default)]
    pub compaction_calls: u64,
    /// What a resume would have to close.
    pub open_work: OpenWorkReport,
    /// Work a crash left open that the resumed session gave up (not violations): counts.
    #[serde(default, skip_serializing_if = "AbandonedCounts::is_zero")]
    pub abandoned_counts: AbandonedCounts,
    /// The first [`MAX_VIOLATIONS`] of those items, in file order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub abandoned: Vec<AbandonedRef>,
    /// The first [`MAX_VIOLATIONS`] violations, in file order.
    pub violations: Vec<Violation>,
    /// All violations found.
    pub violation_count: u64,
    /// All violations by kind.
    pub violations_by_kind: BTreeMap<ViolationKind, u64>,
}

/// One kind of LLM call: how many, and by which events they were counted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LlmCallKind {
    /// `main-turns`, `sub-agent-turns`, `sub-agent-answers` or `compactions`.
    pub kind: String,
    /// Calls of this kind.
    pub count: u64,
    /// The events that were counted, one per call.
    pub counted_by: String,
}

impl LlmCallKind {
    /// The kinds of calls `counts` holds (main-agent turns always, the others when present),
    /// in the order the table shows them.
    pub(crate) fn all(counts: &crate::tracking::Counters) -> Vec<LlmCallKind> {
        let agent_turns: u64 = counts.agent_turns.values().sum();
        let answers: u64 = counts.agent_answer_calls.values().sum();
        let kind = |kind: &str, count: u64, counted_by: &str| LlmCallKind {
            kind: kind.to_owned(),
            count,
            counted_by: counted_by.to_owned(),
        };
        let mut kinds = vec![kind(
            "main-turns",
            counts.turns - agent_turns.min(counts.turns),
            "assistant.turn_start without agentId",
        )];
        if agent_turns > 0 {
            kinds.push(kind(
                "sub-agent-turns",
                agent_turns,
                "assistant.turn_start with agentId (turnstile's sub-agents)",
            ));
        }
        if answers > 0 {
            kinds.push(kind(
                "sub-agent-answers",
                answers,
                "assistant.message with agentId outside a turn of its agent (the Copilot CLI writes no turn events for a sub-agent's call)",
            ));
        }
        if counts.compaction_calls > 0 {
            kinds.push(kind(
                "compactions",
                counts.compaction_calls,
                "session.compaction_start (one summary call each)",
            ));
        }
        kinds
    }
}

/// A broken invariant at one line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Violation {
    /// 1-based line number.
    pub line: u64,
    /// Which invariant.
    pub kind: ViolationKind,
    /// What is wrong, naming the ids and lines involved.
    pub message: String,
}

/// The invariants an audit checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ViolationKind {
    /// The line is not a valid event (JSON, envelope, UTF-8).
    BadLine,
    /// The last line has no newline (a torn write, or a writer still busy).
    TornTail,
    /// `parentId` is not the previous persisted event's id (or not null on the first event).
    ParentChain,
    /// `assistant.turn_start`/`assistant.turn_end` do not pair up.
    TurnPairing,
    /// A `turnId` repeats within one interaction.
    DuplicateTurnId,
    /// `tool.execution_start`/`tool.execution_complete` do not pair up, or a turn ended with
    /// calls that have no result.
    ToolPairing,
    /// An event of an ephemeral type (or marked `"ephemeral":true`) is on disk.
    EphemeralOnDisk,
    /// A tool call id is used twice within one turn (twice in the model's requests, or a
    /// finished call started again).
    DuplicateToolCallId,
}

impl ViolationKind {
    /// The kebab-case name used in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            ViolationKind::BadLine => "bad-line",
            ViolationKind::TornTail => "torn-tail",
            ViolationKind::ParentChain => "parent-chain",
            ViolationKind::TurnPairing => "turn-pairing",
            ViolationKind::DuplicateTurnId => "duplicate-turn-id",
            ViolationKind::ToolPairing => "tool-pairing",
            ViolationKind::EphemeralOnDisk => "ephemeral-on-disk",
            ViolationKind::DuplicateToolCallId => "duplicate-tool-call-id",
        }
    }
}

/// One item a crash left open and a resumed session gave up.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AbandonedRef {
    /// What it was: `turn`, `tool-call`, `permission` or `external-tool`.
    pub kind: String,
    /// Its `turnId`, tool call id or request id.
    pub id: String,
    /// Line where it was opened.
    pub line: u64,
    /// Line of the `session.resume` after which it was given up.
    pub resume_line: u64,
}

impl AbandonedRef {
    /// The items of one abandonment, turns first.
    pub(crate) fn all(a: &Abandoned) -> impl Iterator<Item = AbandonedRef> + '_ {
        let item = move |kind: &str, id: &str, line: u64| AbandonedRef {
            kind: kind.to_owned(),
            id: id.to_owned(),
            line,
            resume_line: a.resume_line,
        };
        let turns = a
            .turns
            .iter()
            .map(move |t| item("turn", &t.turn_id, t.line));
        let calls = a
            .tool_calls
            .iter()
            .map(move |c| item("tool-call", &c.tool_call_id, c.line));
        let permissions = a
            .permissions
            .iter()
            .map(move |p| item("permission", &p.request_id, p.line));
        let external = a
            .external_tools
            .iter()
            .map(move |p| item("external-tool", &p.request_id, p.line));
        turns.chain(calls).chain(permissions).chain(external)
    }
}

/// Open work at the end of the journal.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OpenWorkReport {
    /// A resume would record `sessionWasActive: true`.
    pub session_was_active: bool,
    /// Turns without `assistant.turn_end`.
    pub turns: Vec<OpenTurnRef>,
    /// Tool calls without a result.
    pub tool_calls: Vec<OpenToolRef>,
    /// Permission requests without an answer.
    pub permissions: Vec<OpenRequestRef>,
    /// External-tool requests whose call has no result.
    pub external_tools: Vec<OpenRequestRef>,
    /// Items dropped because too many were open at once (damaged journals only).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub dropped: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// An open turn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OpenTurnRef {
    /// Its `turnId`.
    pub turn_id: String,
    /// Its sub-agent, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// Line of its `assistant.turn_start`.
    pub line: u64,
}

/// An open tool call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OpenToolRef {
    /// Its id.
    pub tool_call_id: String,
    /// The tool.
    pub name: String,
    /// Whether `tool.execution_start` was recorded.
    pub started: bool,
    /// Line of its request or start.
    pub line: u64,
}

/// An open permission or external-tool request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OpenRequestRef {
    /// The request id.
    pub request_id: String,
    /// The tool call it belongs to, when recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// Line of the request.
    pub line: u64,
}

impl From<&OpenWork> for OpenWorkReport {
    fn from(open: &OpenWork) -> Self {
        OpenWorkReport {
            session_was_active: !open.is_idle(),
            turns: open
                .turns
                .iter()
                .map(|t| OpenTurnRef {
                    turn_id: t.turn_id.clone(),
                    agent_id: t.agent_id.clone(),
                    line: t.line,
                })
                .collect(),
            tool_calls: open
                .tool_calls_in_order()
                .into_iter()
                .map(|c| OpenToolRef {
                    tool_call_id: c.tool_call_id.clone(),
                    name: c.name.clone(),
                    started: c.started,
                    line: c.line,
                })
                .collect(),
            permissions: open
                .permissions_in_order()
                .into_iter()
                .map(|p| OpenRequestRef {
                    request_id: p.request_id.clone(),
                    tool_call_id: p.tool_call_id.clone(),
                    line: p.line,
                })
                .collect(),
            external_tools: open
                .external_tools_in_order()
                .into_iter()
                .map(|p| OpenRequestRef {
                    request_id: p.request_id.clone(),
                    tool_call_id: Some(p.tool_call_id.clone()),
                    line: p.line,
                })
                .collect(),
            dropped: open.dropped,
        }
    }
}

impl OpenWorkReport {
    /// True when nothing is open.
    pub fn is_empty(&self) -> bool {
        self.turns.is_empty()
            && self.tool_calls.is_empty()
            && self.permissions.is_empty()
            && self.external_tools.is_empty()
    }
}

impl AuditReport {
    /// True when no invariant is broken.
    pub fn is_clean(&self) -> bool {
        self.violation_count == 0
    }

    /// Violations of the pairing invariants (turns, tool calls) only.
    pub fn pairing_violations(&self) -> impl Iterator<Item = &Violation> {
        self.violations.iter().filter(|v| {
            matches!(
                v.kind,
                ViolationKind::TurnPairing | ViolationKind::ToolPairing
            )
        })
    }

    /// A short table for people.
    pub fn render_table(&self) -> String {
        let mut out = String::new();
        let row = |out: &mut String, label: &str, value: String| {
            let _ = writeln!(out, "  {label:<26} {value}");
        };
        let _ = writeln!(
            out,
            "{}  ({} bytes, {} lines)",
            self.path,
            group(self.bytes),
            group(self.lines)
        );
        let only_turns = self.llm_call_kinds.len() <= 1 && self.llm_calls == self.turns;
        if only_turns {
            row(&mut out, "turns (LLM calls)", group(self.turns));
        } else {
            row(&mut out, "LLM calls", group(self.llm_calls));
            for k in &self.llm_call_kinds {
                row(
                    &mut out,
                    &format!("  {}", k.kind),
                    format!("{}  ({})", group(k.count), k.counted_by),
                );
            }
        }
        let answers = &self.agent_answer_calls;
        if !self.agent_turns.is_empty() || !answers.is_empty() {
            let main = self.turns - self.agent_turns.values().sum::<u64>().min(self.turns);
            let mut by_agent: BTreeMap<&str, u64> = BTreeMap::new();
            for (agent, n) in self.agent_turns.iter().chain(answers) {
                *by_agent.entry(agent).or_default() += n;
            }
            let mut split = vec![format!("main {}", group(main))];
            split.extend(
                by_agent
                    .iter()
                    .map(|(agent, n)| format!("{agent} {}", group(*n))),
            );
            row(&mut out, "  by agent", split.join(", "));
        }
        row(&mut out, "events", group(self.events));
        let mut users = group(self.user_messages);
        if self.autopilot_continuations > 0 {
            let _ = write!(
                users,
                " (+{} autopilot continuations)",
                group(self.autopilot_continuations)
            );
        }
        row(&mut out, "user messages", users);
        let (ok, failed) = self
            .tool_calls
            .values()
            .fold((0, 0), |(o, f), t| (o + t.ok, f + t.failed));
        row(
            &mut out,
            "tool calls",
            format!(
                "{} ({} ok, {} failed)",
                group(ok + failed),
                group(ok),
                group(failed)
            ),
        );
        let mut tools: Vec<_> = self.tool_calls.iter().collect();
        tools.sort_by(|a, b| {
            (b.1.ok + b.1.failed)
                .cmp(&(a.1.ok + a.1.failed))
                .then(a.0.cmp(b.0))
        });
        for (name, t) in tools.iter().take(8) {
            row(
                &mut out,
                &format!("  {name}"),
                format!("{} ok, {} failed", group(t.ok), group(t.failed)),
            );
        }
        if tools.len() > 8 {
            row(&mut out, "  ...", format!("{} more tools", tools.len() - 8));
        }
        let task = match &self.task_complete {
            None => "no".to_owned(),
            Some(t) => {
                let verdict = match t.success {
                    Some(true) => "success",
                    Some(false) => "not accepted",
                    None => "outcome not recorded",
                };
                let summary = t.summary.as_deref().unwrap_or("");
                let short: String = summary.chars().take(60).collect();
                let more = if summary.chars().count() > 60 {
                    "..."
                } else {
                    ""
                };
                format!("yes, {verdict}: {short:?}{more}")
            }
        };
        row(&mut out, "task complete", task);
        row(
            &mut out,
            "errors / aborts / resumes",
            format!("{} / {} / {}", self.errors, self.aborts, self.resumes),
        );
        let open = &self.open_work;
        let open_text = if open.is_empty() {
            if open.session_was_active {
                "none (loop was running)".to_owned()
            } else {
                "none".to_owned()
            }
        } else {
            format!(
                "{} turns, {} tool calls, {} permission requests, {} external tool requests",
                open.turns.len(),
                open.tool_calls.len(),
                open.permissions.len(),
                open.external_tools.len()
            )
        };
        row(&mut out, "open work", open_text);
        let a = &self.abandoned_counts;
        if !a.is_zero() {
            row(
                &mut out,
                "abandoned at resume",
                format!(
                    "{} turns, {} tool calls, {} requests (left by a crash, not violations)",
                    a.turns, a.tool_calls, a.requests
                ),
            );
        }
        if self.violation_count == 0 {
            row(&mut out, "violations", "none".to_owned());
        } else {
            let kinds: Vec<String> = self
                .violations_by_kind
                .iter()
                .map(|(k, n)| format!("{} {}", n, k.as_str()))
                .collect();
            row(
                &mut out,
                "violations",
                format!("{} ({})", group(self.violation_count), kinds.join(", ")),
            );
            for v in self.violations.iter().take(10) {
                let _ = writeln!(
                    out,
                    "    line {}: {}: {}",
                    v.line,
                    v.kind.as_str(),
                    v.message
                );
            }
            if self.violation_count > 10 {
                let _ = writeln!(
                    out,
                    "    ... {} more (see --json)",
                    self.violation_count - 10
                );
            }
        }
        out
    }
}

/// `1234567` -> `1,234,567`.
fn group(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_digits() {
        assert_eq!(group(0), "0");
        assert_eq!(group(999), "999");
        assert_eq!(group(1000), "1,000");
        assert_eq!(group(419_486_722), "419,486,722");
    }

    #[test]
    fn kinds_serialize_kebab_case() {
        for kind in [
            ViolationKind::BadLine,
            ViolationKind::DuplicateTurnId,
            ViolationKind::EphemeralOnDisk,
            ViolationKind::DuplicateToolCallId,
        ] {
            assert_eq!(serde_json::to_value(kind).unwrap(), kind.as_str());
        }
    }
}
