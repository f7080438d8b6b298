//! Continuing the pending work a resume kept open (`pending.rs`): the awaited answers, the
//! end of the open turn, then the loop from the next turn, to idle.

use tokio_util::sync::CancellationToken;
use turnstile_journal::Uuid;

use super::actor::Actor;
use super::error::LoopError;
use super::message::Message;
use super::pending::PendingWork;
use super::send::Outcome;

impl Actor {
    /// Continues the pending work: answers awaited again, the turn ended, then the loop goes
    /// on from the next turn, to idle.
    pub(super) async fn continue_pending(
        &self,
        work: PendingWork,
        cancel: &CancellationToken,
    ) -> Result<Outcome, LoopError> {
        let mode = self.parts.config.mode;
        // The headers of the original send are not journaled: continued calls go without.
        let mut msg = Message::new(
            work.interaction_id.clone(),
            Uuid::new_v4().to_string(),
            mode,
            cancel,
            Vec::new(),
        );
        let model = work
            .model
            .clone()
            .unwrap_or_else(|| self.parts.config.model.clone());
        let end = self
            .resume_calls(&work.calls, &work.turn_id, &msg, &model)
            .await?;
        self.end_turn(&work.turn_id).await?;
        msg.task_completed |= end.task_completed;
        if end.aborted {
            self.idle(mode, true).await?;
            return Ok(Outcome::Aborted);
        }
        if end.rejected || msg.task_completed {
            self.idle(mode, false).await?;
            return Ok(Outcome::Idle);
        }
        let next = work.turn_id.parse::<u64>().map_or(0, |t| t + 1);
        self.run_turns(&mut msg, next).await
    }
}
