//! What to do to re-run a recording: the prompts to send, in which mode, where the recording was
//! aborted, where its process stopped (cleanly or not) and was resumed, and the settings the
//! journal reveals (model, system prompt, autopilot cap, deny rules, working directory).

use std::collections::{HashMap, HashSet};
use std::path::Path;

use turnstile_loop::AgentMode;
use turnstile_loop::autopilot::DEFAULT_MAX_CONTINUES;

use crate::error::FixtureError;
use crate::journal::JournalLine;
use crate::manifest::Profile;

/// "Once the replay has written the `occurrence`-th event of type `event_type`".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trigger {
    /// The event type.
    pub event_type: String,
    /// 1-based count of events of that type in the whole session.
    pub occurrence: usize,
}

/// One prompt to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedSend {
    /// The prompt (`content` of the recorded `user.message`).
    pub prompt: String,
    /// Interactive or autopilot.
    pub mode: AgentMode,
    /// Abort the message at this point (the recording has an `abort` there).
    pub abort: Option<Trigger>,
    /// The recording holds the prompt without its call: the next main-agent event after its
    /// `user.message` (a `system.message` aside) is another `user.message`, or there is none.
    /// The Copilot CLI's `session.history.truncate` to the prompt's turn leaves this: it
    /// removes the call from its journal. The replay makes the call, aborts it and truncates
    /// it away.
    pub unanswered: bool,
    /// Line of the recorded `user.message`.
    pub line: u64,
}

/// How a process of the recording ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SegmentEnd {
    /// `session.shutdown`: the session is shut down cleanly.
    Shutdown,
    /// The journal stops there (the process died, or the journal was copied while open): the
    /// replay stops the session's process at that point, without a shutdown.
    Cut(Trigger),
}

/// The events one process of the recording wrote: from `session.start` or `session.resume` to
/// `session.shutdown` or the point where it died.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    /// The segment resumes the session (it begins with `session.resume`).
    pub resume: bool,
    /// The prompts sent in this process, in order.
    pub sends: Vec<PlannedSend>,
    /// How the process ended.
    pub end: SegmentEnd,
    /// The first `system.message` this process recorded (the runtime writes one before every
    /// prompt, built where and when the process ran, so a resumed process may carry another).
    pub system_prompt: Option<String>,
}

/// Everything a replay needs from the recording.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The processes, in order.
    pub segments: Vec<Segment>,
    /// `selectedModel` of `session.start` (else the first turn's model, else `replay`).
    pub model: String,
    /// The first recorded `system.message` content.
    pub system_prompt: Option<String>,
    /// Autopilot nudges allowed per message.
    pub max_autopilot_continues: u32,
    /// Rules named by the recording's `denied-by-rules` permission results.
    pub denied_rules: Vec<String>,
    /// `context.cwd` of `session.start` (else of the first `session.resume`).
    pub recorded_cwd: Option<String>,
    /// `producer` of `session.start`.
    pub producer: Option<String>,
    /// `sessionId` of `session.start`.
    pub recorded_session_id: Option<String>,
    /// The context window the recording compacted or truncated against: the first
    /// `tokenLimit` of a main-agent `session.compaction_start`, `session.compaction_complete`
    /// or `session.truncation`.
    pub token_limit: Option<u64>,
}

impl Plan {
    /// Every prompt, in order.
    pub fn prompts(&self) -> impl Iterator<Item = &PlannedSend> {
        self.segments.iter().flat_map(|s| s.sends.iter())
    }
}

/// Event types the behaviour profile compares; a trigger in a behaviour-compared replay names
/// one of them, since other events (permission asks, mode changes) differ between engines.
pub const BEHAVIOUR_TYPES: [&str; 10] = [
    "user.message",
    "assistant.turn_start",
    "assistant.message",
    "tool.execution_start",
    "tool.execution_complete",
    "assistant.turn_end",
    "session.task_complete",
    "session.error",
    "abort",
    "session.resume",
];

/// Works out the plan of the recording `lines` (read from `path`).
pub fn plan(lines: &[JournalLine], profile: Profile, path: &Path) -> Result<Plan, FixtureError> {
    let unreplayable = |reason: String| FixtureError::Unreplayable {
        path: path.to_path_buf(),
        reason,
    };
    let continued: HashSet<String> = lines
        .iter()
        .filter(|l| l.is_top_level() && l.event_type() == "user.message")
        .map(|l| l.data())
        .filter(|d| d["isAutopilotContinuation"] == true)
        .filter_map(|d| d["interactionId"].as_str().map(str::to_owned))
        .collect();

    let mut plan = Plan {
        segments: Vec::new(),
        model: String::new(),
        system_prompt: None,
        max_autopilot_continues: DEFAULT_MAX_CONTINUES,
        denied_rules: Vec::new(),
        recorded_cwd: None,
        producer: None,
        recorded_session_id: None,
        token_limit: None,
    };
    let mut segment = Segment {
        resume: false,
        sends: Vec::new(),
        end: SegmentEnd::Shutdown,
        system_prompt: None,
    };
    let mut counts: HashMap<&str, usize> = HashMap::new();
    // The last event a trigger may name, so far.
    let mut last_trigger: Option<Trigger> = None;
    let mut shut_down_at: Option<u64> = None;
    let mut session_mode = AgentMode::Interactive;
    let mut nudges = 0u32;
    let mut most_nudges = 0u32;
    let mut capped_at: Option<u32> = None;
    // The last prompt sent, while nothing but `system.message`s followed it.
    let mut open_prompt = false;

    for line in lines {
        let kind = line.event_type();
        let data = line.data();
        let top = line.is_top_level();
        if let Some(at) = shut_down_at
            && kind != "session.resume"
        {
            return Err(unreplayable(format!(
                "line {}: {kind} after the session.shutdown of line {at}, with no session.resume between",
                line.number
            )));
        }
        if top && kind != "system.message" {
            if open_prompt
                && kind == "user.message"
                && let Some(send) = segment.sends.last_mut()
            {
                send.unanswered = true;
            }
            open_prompt = false;
        }
        match kind {
            "session.start" => {
                plan.model = data["selectedModel"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                plan.recorded_cwd = data["context"]["cwd"].as_str().map(str::to_owned);
                plan.producer = data["producer"].as_str().map(str::to_owned);
                plan.recorded_session_id = data["sessionId"].as_str().map(str::to_owned);
            }
            "session.resume" => {
                let end = match shut_down_at.take() {
                    Some(_) => SegmentEnd::Shutdown,
                    None => SegmentEnd::Cut(last_trigger.clone().ok_or_else(|| {
                        unreplayable(format!(
                            "line {}: the journal begins with session.resume",
                            line.number
                        ))
                    })?),
                };
                segment.end = end;
                plan.segments.push(std::mem::replace(
                    &mut segment,
                    Segment {
                        resume: true,
                        sends: Vec::new(),
                        end: SegmentEnd::Shutdown,
                        system_prompt: None,
                    },
                ));
                if plan.recorded_cwd.is_none() {
                    plan.recorded_cwd = data["context"]["cwd"].as_str().map(str::to_owned);
                }
            }
            "session.compaction_start" | "session.compaction_complete" | "session.truncation"
                if top && plan.token_limit.is_none() =>
            {
                plan.token_limit = data["tokenLimit"].as_u64();
            }
            "session.shutdown" => shut_down_at = Some(line.number),
            "session.mode_changed" => {
                session_mode = data["newMode"]
                    .as_str()
                    .and_then(AgentMode::parse)
                    .unwrap_or(session_mode);
            }
            "system.message" if top => {
                let content = data["content"].as_str().map(str::to_owned);
                if segment.system_prompt.is_none() {
                    segment.system_prompt = content.clone();
                }
                if plan.system_prompt.is_none() {
                    plan.system_prompt = content;
                }
            }
            "assistant.turn_start" if plan.model.is_empty() => {
                plan.model = data["model"].as_str().unwrap_or_default().to_owned();
            }
            "user.message" if top => {
                if data["isAutopilotContinuation"] == true {
                    nudges += 1;
                    most_nudges = most_nudges.max(nudges);
                } else {
                    nudges = 0;
                    let autopilot = data["agentMode"] == "autopilot"
                        || session_mode == AgentMode::Autopilot
                        || data["interactionId"]
                            .as_str()
                            .is_some_and(|id| continued.contains(id));
                    segment.sends.push(PlannedSend {
                        prompt: data["content"].as_str().unwrap_or_default().to_owned(),
                        mode: if autopilot {
                            AgentMode::Autopilot
                        } else {
                            AgentMode::Interactive
                        },
                        abort: None,
                        unanswered: false,
                        line: line.number,
                    });
                    open_prompt = true;
                }
            }
            "abort" if top => {
                let trigger = last_trigger.clone();
                let send = segment.sends.last_mut().ok_or_else(|| {
                    unreplayable(format!(
                        "line {}: an abort with no prompt before it in the same process",
                        line.number
                    ))
                })?;
                send.abort = trigger;
            }
            "session.warning" if data["warningType"] == "autopilot" => {
                capped_at = Some(capped_at.map_or(nudges, |c| c.min(nudges)));
            }
            "permission.completed" if data["result"]["kind"] == "denied-by-rules" => {
                for rule in data["result"]["rules"].as_array().into_iter().flatten() {
                    if let Some(rule) = rule.as_str()
                        && !plan.denied_rules.iter().any(|r| r == rule)
                    {
                        plan.denied_rules.push(rule.to_owned());
                    }
                }
            }
            _ => {}
        }
        let count = counts.entry(kind).or_default();
        *count += 1;
        if profile == Profile::Strict || BEHAVIOUR_TYPES.contains(&kind) {
            last_trigger = Some(Trigger {
                event_type: kind.to_owned(),
                occurrence: *count,
            });
        }
    }
    if open_prompt && let Some(send) = segment.sends.last_mut() {
        send.unanswered = true;
    }
    segment.end = match shut_down_at {
        Some(_) => SegmentEnd::Shutdown,
        None => SegmentEnd::Cut(last_trigger.unwrap_or(Trigger {
            event_type: "session.start".into(),
            occurrence: 1,
        })),
    };
    plan.segments.push(segment);
    if plan.model.is_empty() {
        plan.model = "replay".into();
    }
    plan.max_autopilot_continues = capped_at.unwrap_or(DEFAULT_MAX_CONTINUES.max(most_nudges));
    if plan.prompts().next().is_none() {
        return Err(unreplayable(
            "the recording has no user prompt to send".into(),
        ));
    }
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};
    use turnstile_journal::Event;

    use super::*;

    fn journal(events: &[(&str, Value)]) -> Vec<JournalLine> {
        events
            .iter()
            .enumerate()
            .map(|(i, (event_type, data))| {
                let raw = serde_json::value::to_raw_value(data).unwrap();
                JournalLine {
                    number: i as u64 + 1,
                    event: Event::with_raw_data((*event_type).into(), raw, None),
                    text: String::new(),
                }
            })
            .collect()
    }

    fn unanswered(events: &[(&str, Value)]) -> Vec<bool> {
        let plan = plan(&journal(events), Profile::Behaviour, Path::new("t.jsonl")).unwrap();
        plan.prompts().map(|s| s.unanswered).collect()
    }

    #[test]
    fn a_prompt_with_no_call_before_the_next_prompt_or_the_end_is_unanswered() {
        let start = ("session.start", json!({"selectedModel": "m"}));
        let system = ("system.message", json!({"content": "s"}));
        let prompt = |c: &str| ("user.message", json!({"content": c}));
        let turn = ("assistant.turn_start", json!({"turnId": "0"}));
        let end = ("assistant.turn_end", json!({"turnId": "0"}));
        // Answered, then truncated away before the next prompt, then truncated at the end.
        let shapes = [
            start.clone(),
            system.clone(),
            prompt("one"),
            turn.clone(),
            end.clone(),
            system.clone(),
            prompt("two"),
            system.clone(),
            prompt("three"),
            turn.clone(),
            end.clone(),
            prompt("four"),
        ];
        assert_eq!(unanswered(&shapes), [false, true, false, true]);
        // Anything else after a prompt is its turn's (an abort, a hook, an error).
        for after in ["abort", "hook.start", "session.error"] {
            let shapes = [
                start.clone(),
                prompt("one"),
                (after, json!({})),
                prompt("two"),
                turn.clone(),
            ];
            assert_eq!(unanswered(&shapes), [false, false], "{after}");
        }
    }
}
