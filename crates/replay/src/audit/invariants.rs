//! The order-dependent part of an audit: counts and invariants over the lines in file order.
//!
//! Memory is bounded: besides the report, the auditor keeps the open work (capped), the turn
//! ids of the current interaction (a bitset for numeric ids plus a capped set) and the distinct
//! type and tool names (capped), never anything per event.

use std::collections::{BTreeMap, HashMap, HashSet};

use turnstile_journal::Uuid;

use super::line::{Facts, Outcome};
use super::report::{
    AbandonedRef, AuditReport, LlmCallKind, MAX_VIOLATIONS, OpenWorkReport, Violation,
    ViolationKind,
};
use crate::open_work::{OpenWork, ToolStart, TurnEnd};
use crate::raw::fields::{Kind, Store};
use crate::raw::types::{TypeRef, known_types, type_name};
use crate::tracking::{Counters, Step, track};

/// Distinct unknown type names counted separately; the rest are lumped.
const MAX_NAMES: usize = 4096;
/// Non-numeric turn ids remembered per interaction for the duplicate check.
const MAX_TURN_IDS: usize = 65_536;
/// Tool call ids remembered per open turn for the duplicate check.
const MAX_TURN_CALL_IDS: usize = 65_536;
/// Name of the bucket for names beyond [`MAX_NAMES`].
const OTHER: &str = "(other)";

/// Turn ids seen since the last user message.
#[derive(Debug, Default)]
struct TurnIds {
    numeric: Vec<u64>,
    other: HashSet<String>,
}

impl TurnIds {
    /// Records `id`; false when it was already there.
    fn insert(&mut self, id: &str) -> bool {
        // Turn ids are "0", "1", ...: a bitset makes long autopilot interactions cheap.
        if let Ok(n) = id.parse::<u32>()
            && n < (1 << 24)
            && !id.starts_with('+')
            && (id == "0" || !id.starts_with('0'))
        {
            let (word, bit) = ((n / 64) as usize, n % 64);
            if self.numeric.len() <= word {
                self.numeric.resize(word + 1, 0);
            }
            let fresh = self.numeric[word] & (1 << bit) == 0;
            self.numeric[word] |= 1 << bit;
            return fresh;
        }
        if self.other.len() >= MAX_TURN_IDS {
            return true;
        }
        self.other.insert(id.to_owned())
    }

    fn clear(&mut self) {
        self.numeric.clear();
        self.other.clear();
    }
}

/// Tool call ids used by one agent's open turn, with the line that first used each.
#[derive(Debug, Default)]
struct TurnCalls {
    agent: Option<String>,
    ids: HashMap<String, u64>,
}

/// Checks invariants line by line.
#[derive(Debug, Default)]
pub(crate) struct Auditor {
    report: AuditReport,
    known_counts: Vec<u64>,
    unknown_counts: BTreeMap<String, u64>,
    open: OpenWork,
    counts: Counters,
    /// Turn ids of the current interaction, per agent (almost always just the main agent).
    turn_ids: Vec<(Option<String>, TurnIds)>,
    /// Tool call ids of each agent's open turn (emptied when the turn starts or ends).
    turn_calls: Vec<TurnCalls>,
    /// Id of the last persisted event; `None` before the first.
    last_id: Option<u128>,
    last_line: u64,
    /// False right after a line that is not an event: its id is unknown, so the next
    /// `parentId` cannot be checked.
    chain_known: bool,
    first_seen: bool,
}

impl Auditor {
    /// A new auditor for `path` of `bytes` bytes.
    pub(crate) fn new(path: String, bytes: u64) -> Self {
        Auditor {
            report: AuditReport {
                path,
                bytes,
                ..AuditReport::default()
            },
            known_counts: vec![0; known_types().len()],
            chain_known: true,
            ..Auditor::default()
        }
    }

    fn turn_ids_of(&mut self, agent: Option<&str>) -> &mut TurnIds {
        let i = match self
            .turn_ids
            .iter()
            .position(|(a, _)| a.as_deref() == agent)
        {
            Some(i) => i,
            None => {
                self.turn_ids
                    .push((agent.map(str::to_owned), TurnIds::default()));
                self.turn_ids.len() - 1
            }
        };
        &mut self.turn_ids[i].1
    }

    /// Records that the open turn of `agent` uses tool call `id` at `line`; the line of the
    /// earlier use when the id was already used in that turn.
    fn use_call_id(&mut self, agent: Option<&str>, id: &str, line: u64) -> Option<u64> {
        let calls = match self
            .turn_calls
            .iter()
            .position(|c| c.agent.as_deref() == agent)
        {
            Some(i) => &mut self.turn_calls[i],
            None => {
                self.turn_calls.push(TurnCalls {
                    agent: agent.map(str::to_owned),
                    ids: HashMap::new(),
                });
                self.turn_calls.last_mut()?
            }
        };
        if let Some(&first) = calls.ids.get(id) {
            return Some(first);
        }
        if calls.ids.len() < MAX_TURN_CALL_IDS {
            calls.ids.insert(id.to_owned(), line);
        }
        None
    }

    /// Forgets the tool call ids of `agent`'s turn (a turn starts or ends).
    fn reset_call_ids(&mut self, agent: Option<&str>) {
        if let Some(calls) = self
            .turn_calls
            .iter_mut()
            .find(|c| c.agent.as_deref() == agent)
        {
            calls.ids.clear();
            calls.ids.shrink_to(64);
        }
    }

    /// Duplicate tool call ids within one turn: twice in the model's requests, or a call
    /// started again after it finished.
    fn check_call_ids(&mut self, line: u64, f: &Facts, store: &Store) {
        let agent = store.opt(f.agent);
        if self.open.turn_of(agent).is_none() {
            return;
        }
        let d = &f.fields;
        match f.kind {
            Kind::AssistantMessage => {
                for (id, _) in d.requests(store) {
                    let Some(id) = store.opt(*id) else { continue };
                    if let Some(first) = self.use_call_id(agent, id, line) {
                        self.violation(
                            line,
                            ViolationKind::DuplicateToolCallId,
                            format!(
                                "tool call id {id:?} was already used in this turn (line {first})"
                            ),
                        );
                    }
                }
            }
            Kind::ToolStart => {
                let Some(id) = store.opt(d.tool_call_id) else {
                    return;
                };
                // Starting a requested (open) call is its normal course; starting a finished
                // one again reuses its id.
                if self.open.tool_calls.contains_key(id) {
                    return;
                }
                if let Some(first) = self.use_call_id(agent, id, line) {
                    self.violation(
                        line,
                        ViolationKind::DuplicateToolCallId,
                        format!(
                            "tool.execution_start reuses tool call id {id:?}, already used in this turn (line {first})"
                        ),
                    );
                }
            }
            _ => {}
        }
    }

    fn violation(&mut self, line: u64, kind: ViolationKind, message: String) {
        self.report.violation_count += 1;
        *self.report.violations_by_kind.entry(kind).or_default() += 1;
        if self.report.violations.len() < MAX_VIOLATIONS {
            self.report.violations.push(Violation {
                line,
                kind,
                message,
            });
        }
    }

    /// Takes the next line (numbered from 1 in file order).
    pub(crate) fn line(&mut self, outcome: &Outcome, store: &Store) {
        self.report.lines += 1;
        let line = self.report.lines;
        match outcome {
            Outcome::Bad(message) => {
                self.violation(line, ViolationKind::BadLine, message.clone());
                self.chain_known = false;
            }
            Outcome::Torn => {
                self.violation(
                    line,
                    ViolationKind::TornTail,
                    "the last line has no newline (torn write, or a writer still appending)"
                        .to_owned(),
                );
                self.chain_known = false;
            }
            Outcome::Event(facts) => self.event(line, facts, store),
        }
    }

    fn event(&mut self, line: u64, f: &Facts, store: &Store) {
        self.report.events += 1;
        match f.type_ref {
            TypeRef::Known(i) => self.known_counts[usize::from(i)] += 1,
            TypeRef::Unknown(span) => {
                let name = store.get(span);
                if let Some(n) = self.unknown_counts.get_mut(name) {
                    *n += 1;
                } else if self.unknown_counts.len() < MAX_NAMES {
                    self.unknown_counts.insert(name.to_owned(), 1);
                } else {
                    *self.unknown_counts.entry(OTHER.to_owned()).or_default() += 1;
                }
            }
        }
        let type_name = type_name(f.type_ref, store);
        if f.ephemeral_type || f.ephemeral_key {
            let why = if f.ephemeral_type {
                "is an ephemeral type"
            } else {
                "is marked \"ephemeral\":true"
            };
            self.violation(
                line,
                ViolationKind::EphemeralOnDisk,
                format!("{type_name} {why} and must not be written to disk"),
            );
        }
        self.check_chain(line, f, f.ephemeral_type);
        self.apply(line, f, store);
    }

    fn check_chain(&mut self, line: u64, f: &Facts, ephemeral: bool) {
        let show = |id: u128| Uuid::from_u128(id).hyphenated().to_string();
        if self.chain_known {
            match (self.first_seen, self.last_id, f.parent) {
                (false, _, Some(parent)) => self.violation(
                    line,
                    ViolationKind::ParentChain,
                    format!(
                        "the first event has parentId {} (expected null)",
                        show(parent)
                    ),
                ),
                (true, Some(last), None) => self.violation(
                    line,
                    ViolationKind::ParentChain,
                    format!(
                        "parentId is null but the previous event is {} (line {})",
                        show(last),
                        self.last_line
                    ),
                ),
                (true, Some(last), Some(parent)) if parent != last => self.violation(
                    line,
                    ViolationKind::ParentChain,
                    format!(
                        "parentId {} is not the previous event {} (line {})",
                        show(parent),
                        show(last),
                        self.last_line
                    ),
                ),
                _ => {}
            }
        }
        // Ephemeral events chain to the last persisted event and are skipped by the next one,
        // as in the runtime's live stream; one on disk must not break the chain a second time.
        if !ephemeral || !self.chain_known {
            self.last_id = Some(f.id);
            self.last_line = line;
            self.first_seen = true;
            self.chain_known = true;
        }
    }

    fn apply(&mut self, line: u64, f: &Facts, store: &Store) {
        let agent = store.opt(f.agent);
        let d = &f.fields;
        self.check_call_ids(line, f, store);
        match f.kind {
            Kind::TurnStart | Kind::TurnEnd => self.reset_call_ids(agent),
            _ => {}
        }
        match f.kind {
            Kind::TurnStart => {
                let turn_id = store.opt(d.turn_id).unwrap_or("");
                let fresh = self.turn_ids_of(agent).insert(turn_id);
                if !fresh {
                    self.violation(
                        line,
                        ViolationKind::DuplicateTurnId,
                        format!("turnId {turn_id:?} was already used in this interaction"),
                    );
                }
            }
            // A round of an agent starts with its system message, then (except when the
            // runtime wakes its main agent for an agent that went idle) a user message; each
            // numbers its turns from "0".
            Kind::UserMessage | Kind::SystemMessage => {
                if let Some((_, ids)) = self
                    .turn_ids
                    .iter_mut()
                    .find(|(a, _)| a.as_deref() == agent)
                {
                    ids.clear();
                }
            }
            // A resumed process numbers its turns from "0" again.
            Kind::SessionResume => self.turn_ids.iter_mut().for_each(|(_, ids)| ids.clear()),
            _ => {}
        }
        match track(
            &mut self.open,
            &mut self.counts,
            f.kind,
            agent,
            line,
            d,
            store,
        ) {
            Step::Abandoned(abandoned) => {
                let room = MAX_VIOLATIONS.saturating_sub(self.report.abandoned.len());
                self.report
                    .abandoned
                    .extend(AbandonedRef::all(&abandoned).take(room));
            }
            Step::Plain
            | Step::ToolCompleted(Some(_))
            | Step::ToolStarted(ToolStart::Fresh | ToolStart::Requested) => {}
            Step::TurnReplaced(old) => {
                let turn_id = store.opt(d.turn_id).unwrap_or("");
                self.violation(
                    line,
                    ViolationKind::TurnPairing,
                    format!(
                        "assistant.turn_start (turnId {turn_id:?}) while turn {:?} from line {} has no assistant.turn_end",
                        old.turn_id, old.line
                    ),
                );
            }
            Step::TurnEnded(end) => {
                let turn_id = store.opt(d.turn_id).unwrap_or("");
                match end {
                    TurnEnd::NoOpenTurn => self.violation(
                        line,
                        ViolationKind::TurnPairing,
                        format!("assistant.turn_end (turnId {turn_id:?}) without an open turn"),
                    ),
                    TurnEnd::Mismatch { open } => self.violation(
                        line,
                        ViolationKind::TurnPairing,
                        format!(
                            "assistant.turn_end (turnId {turn_id:?}) but the open turn is {:?} from line {}",
                            open.turn_id, open.line
                        ),
                    ),
                    TurnEnd::Closed { unfinished, .. } => {
                        for id in unfinished {
                            let (name, at) = self
                                .open
                                .tool_calls
                                .get(&id)
                                .map(|c| (c.name.clone(), c.line))
                                .unwrap_or_default();
                            self.violation(
                                line,
                                ViolationKind::ToolPairing,
                                format!("turn {turn_id:?} ended while tool call {id} ({name}, line {at}) has no tool.execution_complete"),
                            );
                        }
                    }
                }
            }
            Step::ToolStarted(ToolStart::Duplicate(at)) => {
                let id = store.opt(d.tool_call_id).unwrap_or("");
                let name = store.opt(d.tool_name).unwrap_or("");
                self.violation(
                    line,
                    ViolationKind::ToolPairing,
                    format!(
                        "tool.execution_start for {id} ({name}), which already started at line {at}"
                    ),
                );
            }
            Step::ToolCompleted(None) => {
                let id = store.opt(d.tool_call_id).unwrap_or("");
                self.violation(
                    line,
                    ViolationKind::ToolPairing,
                    format!("tool.execution_complete for {id}, which was neither requested nor started (or already completed)"),
                );
            }
        }
    }

    /// The report, with the open work at the end of the journal.
    pub(crate) fn finish(mut self) -> AuditReport {
        let mut by_type = std::mem::take(&mut self.unknown_counts);
        for (i, n) in self.known_counts.iter().enumerate() {
            if *n > 0 {
                by_type.insert(known_types()[i].0.to_owned(), *n);
            }
        }
        self.report.by_type = by_type;
        let c = self.counts;
        self.report.llm_calls = c.llm_calls();
        self.report.llm_call_kinds = LlmCallKind::all(&c);
        self.report.turns = c.turns;
        self.report.agent_turns = c.agent_turns;
        self.report.agent_answer_calls = c.agent_answer_calls;
        self.report.user_messages = c.user_messages;
        self.report.autopilot_continuations = c.autopilot_continuations;
        self.report.tool_calls = c.tool_calls;
        self.report.task_complete = c.task_complete;
        self.report.errors = c.errors;
        self.report.aborts = c.aborts;
        self.report.resumes = c.resumes;
        self.report.abandoned_counts = c.abandoned;
        self.report.compaction_calls = c.compaction_calls;
        self.report.open_work = OpenWorkReport::from(&self.open);
        self.report
    }
}
