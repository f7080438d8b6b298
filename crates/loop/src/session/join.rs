//! A client joining a session while it runs a message (a second client's `session.resume` of
//! a session its server has open and busy): `session.resume` is recorded at once, among the
//! running message's events, with `sessionWasActive: true`, as the Copilot CLI records it. The
//! message goes on untouched; the actor takes this one command while a message runs
//! (`actor.rs`), since nothing of the message's own state changes.

use turnstile_journal::Timestamp;

use super::actor::Actor;
use super::error::LoopError;

impl Actor {
    /// Records the joining client's `session.resume` (`continuePendingWork` as it named it).
    pub(super) fn join(&self, continue_pending_work: Option<bool>) -> Result<(), LoopError> {
        let resume = {
            let state = self.emitter.state();
            let mut resume = turnstile_replay::resume_record(&state, &Timestamp::now(), true);
            resume.continue_pending_work = continue_pending_work;
            resume
        };
        self.emitter.emit(&resume)?;
        Ok(())
    }
}
