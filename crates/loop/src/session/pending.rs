//! Work the previous engine left in flight, continued after a resume with
//! `continuePendingWork`: the open turn's tool calls that wait on a permission answer or on a
//! client tool's result stay open, their requests are announced again (same `requestId`, same
//! data), and once every one is answered the turn ends and the loop goes on, as the schema's
//! `session.resume.continuePendingWork` describes. Calls that were running in the engine (a
//! `bash` command) cannot be continued: the resume plan closes them as interrupted.

use std::collections::HashSet;
use std::path::Path;

use turnstile_journal::payload::{ExternalToolRequested, PermissionRequested, SessionResume};
use turnstile_journal::{Event, JournalReader, ReadMode, Uuid};
use turnstile_replay::{Message as ConversationMessage, SessionState};

use super::error::LoopError;
use turnstile_providers::ToolCall;

/// The open turn's calls that can be continued.
pub(super) struct PendingWork {
    pub(super) turn_id: String,
    pub(super) interaction_id: String,
    pub(super) model: Option<String>,
    pub(super) calls: Vec<PendingCall>,
}

/// One call and the request it waits on, as recorded.
pub(super) struct PendingCall {
    pub(super) call: ToolCall,
    pub(super) waiting: Waiting,
}

/// The request a call waits on.
pub(super) enum Waiting {
    /// A permission request nobody answered.
    Permission(PermissionRequested),
    /// A client tool call nobody answered.
    External(ExternalToolRequested),
}

/// Finds the main agent's open turn and those of its calls that wait on a request, reading
/// the requests' recorded data from the journal.
pub(super) fn collect(
    state: &SessionState,
    events: &Path,
) -> Result<Option<PendingWork>, LoopError> {
    let open = &state.open_work;
    let Some(turn) = open.turns.iter().find(|t| t.agent_id.is_none()) else {
        return Ok(None);
    };
    let in_turn = |call_id: &str| {
        open.tool_calls
            .get(call_id)
            .is_some_and(|c| c.turn_id.as_deref() == Some(turn.turn_id.as_str()))
    };
    let mut wanted: Vec<(u64, String)> = Vec::new();
    for p in open.permissions.values() {
        if let Some(call) = p.tool_call_id.as_deref().filter(|c| in_turn(c)) {
            wanted.push((p.line, call.to_owned()));
        }
    }
    for x in open.external_tools.values() {
        if in_turn(&x.tool_call_id) {
            wanted.push((x.line, x.tool_call_id.clone()));
        }
    }
    if wanted.is_empty() {
        return Ok(None);
    }
    wanted.sort();
    let lines: HashSet<u64> = wanted.iter().map(|(l, _)| *l).collect();
    let last = wanted.last().map_or(0, |(l, _)| *l);
    let mut found: Vec<(String, Waiting)> = Vec::new();
    let reader = JournalReader::open(events, ReadMode::Strict)?;
    for record in reader {
        let record = record?;
        if record.line > last {
            break;
        }
        if !lines.contains(&record.line) {
            continue;
        }
        let data = record.event.data.get();
        let waiting = match record.event.event_type.as_str() {
            "permission.requested" => serde_json::from_str(data).ok().map(Waiting::Permission),
            "external_tool.requested" => serde_json::from_str(data).ok().map(Waiting::External),
            _ => None,
        };
        if let (Some(waiting), Some((_, call))) =
            (waiting, wanted.iter().find(|(l, _)| *l == record.line))
        {
            found.push((call.clone(), waiting));
        }
    }
    // The calls in request order, from the assistant message that made them.
    let requests = state
        .conversation
        .iter()
        .rev()
        .find_map(|m| match m {
            ConversationMessage::Assistant { tool_requests, .. }
                if tool_requests
                    .iter()
                    .any(|r| found.iter().any(|(c, _)| *c == r.tool_call_id)) =>
            {
                Some(tool_requests.clone())
            }
            _ => None,
        })
        .unwrap_or_default();
    let mut calls = Vec::new();
    for request in requests {
        // A call waits on at most one request; the latest one recorded counts.
        let Some(index) = found.iter().rposition(|(c, _)| *c == request.tool_call_id) else {
            continue;
        };
        let (_, waiting) = found.swap_remove(index);
        found.retain(|(c, _)| *c != request.tool_call_id);
        calls.push(PendingCall {
            call: ToolCall {
                id: request.tool_call_id,
                name: request.name,
                arguments: match request.arguments {
                    Some(serde_json::Value::String(raw)) => raw,
                    Some(v) => v.to_string(),
                    None => "{}".to_owned(),
                },
            },
            waiting,
        });
    }
    if calls.is_empty() {
        return Ok(None);
    }
    Ok(Some(PendingWork {
        turn_id: turn.turn_id.clone(),
        interaction_id: turn
            .interaction_id
            .clone()
            .unwrap_or_else(|| Uuid::new_v4().to_string()),
        model: turn.model.clone(),
        calls,
    }))
}

/// The resume plan's events with what is continued left open: no cancelled answer for a
/// continued permission, no interrupted result for a continued call, no end for its turn;
/// `session.resume` says `continuePendingWork: true`. Re-chained by `parentId`.
pub(super) fn keep_pending_open(
    events: Vec<Event>,
    work: &PendingWork,
    parent: Option<Uuid>,
) -> Vec<Event> {
    let calls: HashSet<&str> = work.calls.iter().map(|c| c.call.id.as_str()).collect();
    let permissions: HashSet<&str> = work
        .calls
        .iter()
        .filter_map(|c| match &c.waiting {
            Waiting::Permission(p) => Some(p.request_id.as_str()),
            Waiting::External(_) => None,
        })
        .collect();
    let field = |e: &Event, name: &str| -> Option<String> {
        let v: serde_json::Value = serde_json::from_str(e.data.get()).ok()?;
        v.get(name)?.as_str().map(str::to_owned)
    };
    let mut kept = Vec::with_capacity(events.len());
    let mut parent = parent;
    for mut event in events {
        let drop = match event.event_type.as_str() {
            "permission.completed" => {
                field(&event, "requestId").is_some_and(|r| permissions.contains(r.as_str()))
            }
            "tool.execution_complete" => {
                field(&event, "toolCallId").is_some_and(|c| calls.contains(c.as_str()))
            }
            "assistant.turn_end" => {
                event.agent_id.is_none()
                    && field(&event, "turnId").as_deref() == Some(work.turn_id.as_str())
            }
            _ => false,
        };
        if drop {
            continue;
        }
        if event.event_type.as_str() == "session.resume"
            && let Ok(mut resume) = serde_json::from_str::<SessionResume>(event.data.get())
        {
            resume.continue_pending_work = Some(true);
            event.data = Event::new(&resume, parent).data;
        }
        event.parent_id = parent;
        parent = Some(event.id);
        kept.push(event);
    }
    kept
}
