//! The session's start, resume and shutdown: the header facts they give (see `header.rs`) and
//! their marks.

use turnstile_journal::payload::{SessionResume, SessionShutdown, SessionStart};

use super::caps::NOTE_CAP;
use super::header::ModelTokens;
use super::state::{At, Timeline, push_note};
use crate::items::{Clipped, Item, MarkKind, Note, NoteKind};

impl Timeline {
    pub(super) fn on_start(&mut self, start: &SessionStart, at: &At, out: &mut Vec<Item>) {
        self.started = true;
        self.closed_cleanly = false;
        let facts = &mut self.facts;
        facts.session_id.get_or_insert(start.session_id.clone());
        facts.producer.get_or_insert(start.producer.clone());
        if facts.model.is_none() {
            facts.model = start.selected_model.clone();
            facts.models.extend(start.selected_model.clone());
        }
        if facts.cwd.is_none() {
            facts.cwd = start.context.as_ref().map(|c| c.cwd.clone());
        }
        facts.start_time.get_or_insert(start.start_time.clone());
        out.push(at.mark(
            MarkKind::Start,
            &format!(
                "session started by {} {} with {}",
                start.producer,
                start.copilot_version,
                start.selected_model.as_deref().unwrap_or("no model named")
            ),
        ));
    }

    /// A resume after a process that never recorded its shutdown is a crash mark too.
    pub(super) fn on_resume(&mut self, resume: &SessionResume, at: &At, out: &mut Vec<Item>) {
        if self.started && !self.closed_cleanly {
            out.push(at.mark(
                MarkKind::Crash,
                "the process before this resume ended without session.shutdown (it crashed or was killed)",
            ));
        }
        self.started = true;
        self.closed_cleanly = false;
        for open in self.open.values_mut() {
            push_note(
                &mut open.turn.notes,
                Note {
                    kind: NoteKind::Info,
                    line: at.line,
                    text: Clipped::new(
                        "the session was resumed while this turn was open",
                        NOTE_CAP,
                    ),
                    bad: true,
                },
            );
        }
        let active = if resume.session_was_active == Some(true) {
            " (work was open)"
        } else {
            ""
        };
        out.push(at.mark(
            MarkKind::Resume,
            &format!("resumed after {} events{active}", resume.event_count),
        ));
    }

    pub(super) fn on_shutdown(&mut self, shutdown: &SessionShutdown, at: &At, out: &mut Vec<Item>) {
        self.closed_cleanly = true;
        self.facts.shutdown_tokens = shutdown
            .model_metrics
            .iter()
            .filter_map(|(model, v)| {
                let mut t: ModelTokens = serde_json::from_value(v.clone()).ok()?;
                t.model = model.clone();
                Some(t)
            })
            .collect();
        out.push(at.mark(
            MarkKind::Shutdown,
            &format!("shutdown ({})", shutdown.shutdown_type),
        ));
    }
}
