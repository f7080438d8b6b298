//! Opening a session: a new journal (`session.start`), or an existing one resumed (the
//! writer's lock and recovery scan, the fold from the checkpoint, the resume plan, and what a
//! dead engine left: its shells and process groups).

use std::sync::Arc;

use turnstile_journal::payload::{
    Payload, PendingMessagesModified, SessionManagedSettingsResolved, SessionResume, SessionStart,
    SessionWarning,
};
use turnstile_journal::{
    Event, JournalWriter, StateRoot, Timestamp, TrustedPrefix, Uuid, WriterOptions,
};
use turnstile_replay::{SessionState, resume_plan};

use super::emitter::{Emitter, Subscribers};
use super::{
    ContinuedRequests, LoopError, ResumeOptions, ResumeReport, SessionHandle, SessionParts, pending,
};
use turnstile_tools::processes::{self, StoppedGroup};

impl SessionHandle {
    pub(super) fn create_inner(
        root: &StateRoot,
        id: Option<Uuid>,
        parts: SessionParts,
        subscribers: Subscribers,
    ) -> Result<Self, LoopError> {
        let id = id.unwrap_or_else(Uuid::new_v4);
        let options = WriterOptions {
            durability: parts.config.durability,
            sink: parts.config.journal_sink.clone(),
            ..Default::default()
        };
        let (writer, _) = JournalWriter::create(root, id, options)?;
        let emitter = Emitter::new(writer, SessionState::default(), Arc::clone(&subscribers));
        emitter.emit(&SessionStart {
            session_id: id.to_string(),
            version: 1,
            // The Copilot CLI's producer and the release whose format this is: readers
            // recognise and label a Copilot session by them (`docs/decisions.md`).
            producer: turnstile_journal::payload::PRODUCER.into(),
            copilot_version: turnstile_journal::payload::COPILOT_VERSION.into(),
            start_time: Timestamp::now().to_text(),
            selected_model: Some(parts.config.model.clone()),
            reasoning_effort: parts.config.reasoning_effort.clone(),
            // As the Copilot CLI writes them: no tiered model, never steered remotely, and a
            // new session is in no other process's use.
            context_tier: Some(None),
            context: Some(super::workspace_file::context_of(&parts.config.cwd)),
            already_in_use: Some(false),
            remote_steerable: Some(false),
            session_limits: parts.config.session_limits.clone(),
            github_mcp_tool_config: parts.config.github_mcp_tool_config.clone(),
            ..Default::default()
        })?;
        super::workspace_file::write(
            &emitter.writer().paths().dir,
            &emitter.state(),
            &parts.config.client_name,
            None,
        );
        announce_opened(&emitter)?;
        Ok(Self::spawn(
            id,
            emitter,
            subscribers,
            parts,
            None,
            Vec::new(),
            false,
        ))
    }

    pub(super) fn resume_inner(
        root: &StateRoot,
        id: Uuid,
        mut parts: SessionParts,
        subscribers: Subscribers,
        resume_options: ResumeOptions,
    ) -> Result<(Self, ResumeReport), LoopError> {
        let paths = root.session(id);
        if std::fs::symlink_metadata(&paths.events).is_err() {
            return Err(turnstile_journal::layout::LayoutError::NotFound {
                id,
                root: root.dir().to_path_buf(),
            }
            .into());
        }
        // Links are refused before anything (the checkpoint below) is written.
        paths.check_events_file()?;
        // A checkpoint that passes its guard vouches for the journal's prefix, so opening scans
        // only the tail: resume costs the tail, not the session's size. (Should the journal be
        // replaced meanwhile, the fold below notices and refolds everything.)
        let mut checkpoint = turnstile_replay::Checkpoint::trusted(&paths.dir);
        if checkpoint.is_err() {
            // No checkpoint, or a stale one (a copied, restored or salvaged session): fold the
            // journal once now and write the checkpoint from that fold, so the writer's open,
            // the load below and the checkpoint at shutdown all cost only the tail instead of
            // each reading the whole journal again. A journal that cannot be folded (damage)
            // is left to the writer's open, which names the damage.
            if turnstile_replay::write_checkpoint(&paths.dir).is_ok() {
                checkpoint = turnstile_replay::Checkpoint::trusted(&paths.dir);
            }
        }
        let trusted_prefix = checkpoint.as_ref().ok().map(|cp| TrustedPrefix {
            len: cp.offset,
            lines: cp.event_count,
            last_id: cp.last_line_id,
        });
        let options = WriterOptions {
            durability: parts.config.durability,
            trusted_prefix,
            sink: parts.config.journal_sink.clone(),
            ..Default::default()
        };
        // Lock first: the state must be folded from the journal this writer will append to.
        let (writer, recovery) = JournalWriter::open(&paths, options)?;
        let (state, load) = SessionState::load_with(&paths.dir, checkpoint)?;
        let mut plan = resume_plan(&state, Timestamp::now());
        // The session goes on with the model its journal names, which its `session.resume`
        // records, as the Copilot CLI goes on whatever model the resuming client names: the
        // journal's model calls and its events name one model. A caller that wants another
        // switches after the resume, recording `session.model_change`.
        if let Some(model) = &state.session.model {
            parts.config.model.clone_from(model);
        }
        // The limits the journal holds stay in force, as in the Copilot CLI (a resume naming
        // other limits does not change them); a session without any takes the resume's.
        if let Some(limits) = &state.session.session_limits {
            parts.config.session_limits = Some(limits.clone());
        }
        let limits = parts.config.session_limits.clone();
        edit_resume(&mut plan.events, |resume| {
            resume.session_limits = Some(limits)
        });
        // The repository as it is now (a branch changed or a commit made between runs), read
        // where the resumed session works, as the Copilot CLI reads it on every resume.
        let context = super::workspace_file::context_of(&parts.config.cwd);
        edit_resume(&mut plan.events, |resume| resume.context = Some(context));
        if resume_options.continue_pending_work_named {
            let value = resume_options.continue_pending_work;
            edit_resume(&mut plan.events, |resume| {
                resume.continue_pending_work = Some(value)
            });
        }
        let pending = if resume_options.continue_pending_work {
            pending::collect(&state, &paths.events)?
        } else {
            None
        };
        let continued_tool_calls: Vec<String> = pending
            .iter()
            .flat_map(|w| w.calls.iter().map(|c| c.call.id.clone()))
            .collect();
        let mut continued_requests = ContinuedRequests::default();
        for call in pending.iter().flat_map(|w| w.calls.iter()) {
            match &call.waiting {
                pending::Waiting::External(r) => {
                    continued_requests.tool_calls.push(r.request_id.clone());
                }
                pending::Waiting::Permission(r) => {
                    continued_requests.permissions.push(r.request_id.clone());
                }
            }
        }
        if let Some(work) = &pending {
            plan.events = pending::keep_pending_open(plan.events, work, state.last_event_id);
            plan.closed_tool_calls
                .retain(|c| !continued_tool_calls.contains(c));
            plan.closed_turns.retain(|t| *t != work.turn_id);
        }
        let report = ResumeReport {
            events_before: state.event_count,
            was_active: plan.session_was_active,
            closed_tool_calls: plan.closed_tool_calls.clone(),
            closed_turns: plan.closed_turns.clone(),
            used_checkpoint: load.used_checkpoint,
            torn_tail_cut: recovery.torn_tail.is_some(),
            continued_tool_calls,
            continued_requests,
            stopped_process_groups: Vec::new(),
            model: parts.config.model.clone(),
        };
        let emitter = Emitter::new(writer, state, Arc::clone(&subscribers));
        for event in plan.events {
            let resumed = event.event_type.as_str() == SessionResume::TYPE;
            emitter.emit_event(event)?;
            if resumed {
                announce_opened(&emitter)?;
                // Work a dead engine left pending goes on now, without a message: the Copilot
                // CLI announces the (empty) send queue here then, as at a message's start.
                if pending.is_some() {
                    emitter.emit(&PendingMessagesModified {})?;
                }
            }
        }
        let answered: Vec<String> = [
            report.closed_tool_calls.as_slice(),
            report.continued_tool_calls.as_slice(),
        ]
        .concat();
        super::workspace_file::write_on_resume(
            &paths.dir,
            &emitter.state(),
            &parts.config.client_name,
        );
        let lost_shells = super::lost_shells::find(&emitter, &paths.dir, &answered)?;
        let stopped_process_groups = stop_left_processes(&emitter, &paths.dir)?;
        let report = ResumeReport {
            stopped_process_groups,
            ..report
        };
        Ok((
            Self::spawn(
                id,
                emitter,
                subscribers,
                parts,
                pending,
                lost_shells,
                resume_options.hold_pending_work,
            ),
            report,
        ))
    }
}

/// What the Copilot CLI announces right after a session's start or resume: the managed
/// settings in force (none: turnstile reads no enterprise policy). The empty send queue is
/// announced at the first message (`actor.rs`), as the CLI does.
fn announce_opened(emitter: &Emitter) -> Result<(), LoopError> {
    emitter.emit(&SessionManagedSettingsResolved::none())?;
    Ok(())
}

/// Kills the tool process groups a dead engine left running (recorded in
/// `<session>/processes.json`) that prove to be its own supervisors', and records each in a
/// `session.warning`; a record refused while something runs under it is recorded the same
/// way, naming the group and why it was left alone. A list that cannot be read is reported
/// too and left in place.
fn stop_left_processes(
    emitter: &Emitter,
    dir: &std::path::Path,
) -> Result<Vec<StoppedGroup>, LoopError> {
    let left = match processes::stop_leftovers(dir) {
        Ok(left) => left,
        Err(e) => {
            emitter.emit(&SessionWarning {
                warning_type: "processes".into(),
                message: format!(
                    "could not check for tool processes left running by the previous engine: {e}"
                ),
                ..Default::default()
            })?;
            return Ok(Vec::new());
        }
    };
    for group in &left.stopped {
        emitter.emit(&SessionWarning {
            warning_type: "processes".into(),
            message: format!(
                "stopped {} process(es) of tool call {} (process group {}) that the previous engine left running",
                group.processes, group.record.tool_call_id, group.record.pgid
            ),
            ..Default::default()
        })?;
    }
    for group in &left.refused {
        emitter.emit(&SessionWarning {
            warning_type: "processes".into(),
            message: format!(
                "did not stop process group {} recorded for tool call {}: {}",
                group.record.pgid, group.record.tool_call_id, group.reason
            ),
            ..Default::default()
        })?;
    }
    Ok(left.stopped)
}

/// Changes the plan's `session.resume` (its first event).
fn edit_resume(events: &mut [Event], edit: impl FnOnce(&mut SessionResume)) {
    let Some(first) = events.first_mut() else {
        return;
    };
    if let Ok(mut resume) = first.payload::<SessionResume>() {
        edit(&mut resume);
        first.data = Event::new(&resume, first.parent_id).data;
    }
}
