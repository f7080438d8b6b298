//! The events to append before resuming a session, so its history is valid again.
//!
//! A journal cut by a crash can end with a turn that never ended, tool calls that never got a
//! result (started, or only requested by the model) and requests nobody answered. The model
//! must see a result for every tool call, and the journal must pair every start with an end.
//! The plan records the resume (`session.resume`), answers each pending permission request as
//! cancelled, fails each open tool call (which also settles external-tool requests, whose
//! completion is not persisted), and ends each open turn. It never adds a turn start: every LLM
//! call that happened stays counted and none is invented.

use serde_json::json;
use turnstile_journal::payload::{
    AssistantTurnEnd, Payload, PermissionCompleted, SessionResume, ToolError, ToolExecutionComplete,
};
use turnstile_journal::{Event, Timestamp, Uuid};

pub use crate::interrupted::{CANCELLED_REASON, INTERRUPTED_CODE, INTERRUPTED_MESSAGE};
use crate::state::SessionState;

/// What to append to resume a session.
#[derive(Debug, Clone, PartialEq)]
pub struct ResumePlan {
    /// The events, chained by `parentId` from the state's last event.
    pub events: Vec<Event>,
    /// Work was open (or the loop was running) when the journal ended.
    pub session_was_active: bool,
    /// Tool calls failed by the plan, in order.
    pub closed_tool_calls: Vec<String>,
    /// Turns ended by the plan.
    pub closed_turns: Vec<String>,
    /// Permission requests answered as cancelled.
    pub cancelled_permissions: Vec<String>,
}

impl ResumePlan {
    /// Only `session.resume`: nothing was open.
    pub fn is_clean(&self) -> bool {
        self.events.len() == 1
    }
}

/// The plan for resuming `state` at time `now`.
pub fn resume_plan(state: &SessionState, now: Timestamp) -> ResumePlan {
    let open = &state.open_work;
    let active = state.was_active_at_resume();
    let mut plan = ResumePlan {
        events: Vec::new(),
        session_was_active: active,
        closed_tool_calls: Vec::new(),
        closed_turns: Vec::new(),
        cancelled_permissions: Vec::new(),
    };
    let mut parent = state.last_event_id;
    let mut push = |payload: &dyn Fn(Option<Uuid>) -> Event, plan: &mut ResumePlan| {
        let mut event = payload(parent);
        event.timestamp = now.clone();
        parent = Some(event.id);
        plan.events.push(event);
    };

    let resume = resume_record(state, &now, active);
    push(&|p| Event::new(&resume, p), &mut plan);

    for pending in open.permissions_in_order() {
        let completed = PermissionCompleted {
            request_id: pending.request_id.clone(),
            tool_call_id: pending.tool_call_id.clone(),
            result: json!({"kind": "cancelled", "reason": CANCELLED_REASON}),
            decision_source: None,
        };
        push(&|p| Event::new(&completed, p), &mut plan);
        plan.cancelled_permissions.push(pending.request_id.clone());
    }

    for call in open.tool_calls_in_order() {
        let failed = ToolExecutionComplete {
            tool_call_id: call.tool_call_id.clone(),
            model: call.model.clone(),
            interaction_id: call.interaction_id.clone(),
            turn_id: call.turn_id.clone(),
            // As the runtime records an interrupted call: no tool runs remotely here.
            rte: call.model.as_ref().map(|_| false),
            success: false,
            error: Some(ToolError {
                message: INTERRUPTED_MESSAGE.to_owned(),
                code: Some(INTERRUPTED_CODE.to_owned()),
                remediation: None,
            }),
            ..ToolExecutionComplete::default()
        };
        push(
            &|p| with_agent(Event::new(&failed, p), call.agent_id.as_deref()),
            &mut plan,
        );
        plan.closed_tool_calls.push(call.tool_call_id.clone());
    }

    // Sub-agent turns are kept before the main agent's, so the main turn ends last.
    for turn in &open.turns {
        let end = AssistantTurnEnd {
            turn_id: turn.turn_id.clone(),
            model: turn.model.clone(),
        };
        push(
            &|p| with_agent(Event::new(&end, p), turn.agent_id.as_deref()),
            &mut plan,
        );
        plan.closed_turns.push(turn.turn_id.clone());
    }
    debug_assert!(plan.events.iter().all(|e| !e.is_ephemeral()));
    debug_assert_eq!(plan.events[0].event_type.as_str(), SessionResume::TYPE);
    plan
}

/// The `session.resume` of a client taking up `state` at `now`; `active`: the session was
/// running (or cut off) mid-work.
pub fn resume_record(state: &SessionState, now: &Timestamp, active: bool) -> SessionResume {
    SessionResume {
        resume_time: now.to_text(),
        selected_model: state.session.model.clone(),
        // As the Copilot CLI writes them: no tiered model, the limits in force (`null`: none),
        // never steered remotely, and the journal in no other writer's use (the writer lock
        // is held).
        context_tier: Some(None),
        session_limits: Some(state.session.session_limits.clone()),
        context: state.session.context.clone(),
        remote_steerable: Some(false),
        event_count: state.event_count,
        events_file_size_bytes: Some(state.byte_size),
        already_in_use: Some(false),
        session_was_active: Some(active),
        ..SessionResume::default()
    }
}

fn with_agent(mut event: Event, agent: Option<&str>) -> Event {
    event.agent_id = agent.map(str::to_owned);
    event
}
