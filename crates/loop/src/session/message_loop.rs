//! The agent loop of one message: `user.message`, turns until the model answers, autopilot
//! nudges, and the idle that ends it.

use serde_json::json;
use tokio_util::sync::CancellationToken;
use turnstile_journal::Uuid;
use turnstile_journal::payload::{AssistantIdle, SessionError, SessionWarning, UserMessage};

use super::actor::Actor;
use super::background::AgentRunner;
use super::error::LoopError;
use super::message::Message;
use super::prompting::IDLE_DELIVERY;
use super::send::{Outcome, SendOptions};
use super::turn::TurnEnd;
use crate::autopilot::{AgentMode, NUDGE};

/// How many times `agentStop` hooks may keep one message going: a hook that always blocks
/// must not run the model forever (docs/security.md, Bounds).
const MAX_STOP_BLOCKS: u32 = 8;

impl Actor {
    /// Runs one message to idle.
    pub(super) async fn message(
        &self,
        prompt: String,
        options: SendOptions,
        message_id: String,
        waited: bool,
        cancel: &CancellationToken,
    ) -> Result<Outcome, LoopError> {
        if cancel.is_cancelled() {
            // Aborted while queued: it never ran, so it leaves no event. Not even an idle: the
            // client already had the idle of the abort, and a second one could end the wait of
            // a message it sends next.
            tracing::info!(session = %self.id, message_id, "a queued message was aborted before it started");
            return Ok(Outcome::Aborted);
        }
        let mode = options.mode.unwrap_or(self.parts.config.mode);
        let mut msg = Message::new(
            Uuid::new_v4().to_string(),
            message_id,
            mode,
            cancel,
            options.request_headers.clone(),
        );
        let transformed = self.prompt_hook(&prompt).await?;
        self.start_pending_mcp().await?;
        // As the runtime: the system message comes first, before every prompt.
        self.record_system_message(&msg).await?;
        self.record_user_message(prompt, transformed, &options.attachments, &msg, waited)
            .await?;
        self.run_turns(&mut msg, 0).await
    }

    /// The turns of a message from `first_turn` on, autopilot nudges included, to idle.
    pub(super) async fn run_turns(
        &self,
        msg: &mut Message<'_>,
        first_turn: u64,
    ) -> Result<Outcome, LoopError> {
        let mode = msg.mode;
        let mut first_turn = first_turn;
        // One pass a prompt: the user's, then each an `agentStop` hook's block queued.
        loop {
            let (mut agents, runner) = AgentRunner::new(msg);
            msg.agents = Some(runner);
            let mut continues = 0u32;
            let mut turn = first_turn;
            // The Copilot CLI marks the first call of a message `isInitial`, and after a resume
            // the first call of the message it continues too (its turns start again at 0), so
            // the first call here is initial whatever number it has.
            let mut initial = true;
            loop {
                let end = agents.beside(self, self.turn(turn, initial, msg)).await?;
                initial = false;
                msg.woken = false;
                match end {
                    // After `task_complete` the loop ends, as the runtime's does: no further call.
                    TurnEnd::Tools if !msg.task_completed => {
                        turn += 1;
                        continue;
                    }
                    TurnEnd::Tools | TurnEnd::Answered => {}
                    TurnEnd::Rejected => break,
                    TurnEnd::Aborted => {
                        // The abort reached the agents too: they end at once, interrupted.
                        agents.drain(self).await?;
                        return self.idle(mode, true).await.map(|_| Outcome::Aborted);
                    }
                    TurnEnd::Failed(e) => {
                        self.emitter.emit(&SessionError {
                            error_type: e.error_type().to_string(),
                            message: e.message.clone(),
                            status_code: e.status_code,
                            ..Default::default()
                        })?;
                        self.hook_notify(
                            "errorOccurred",
                            json!({"error": {"name": e.error_type(), "message": e.message}}),
                        )
                        .await;
                        agents.drain(self).await?;
                        self.idle(mode, false).await?;
                        return Ok(Outcome::Failed {
                            error_type: e.kind,
                            status_code: e.status_code,
                            message: e.message,
                        });
                    }
                }
                // The model stopped while background agents work: as the runtime, the message
                // stays open, and an agent going idle starts the main agent again (its notice in
                // the next request), in the same interaction with turns counted from 0 again.
                if !msg.task_completed && (agents.busy() || self.agents.has_unannounced()) {
                    self.emitter.emit(&AssistantIdle { aborted: None })?;
                    if agents.busy() {
                        agents.next_idle(self).await?;
                    }
                    if msg.cancel.is_cancelled() {
                        agents.drain(self).await?;
                        self.abort_event()?;
                        return self.idle(mode, true).await.map(|_| Outcome::Aborted);
                    }
                    self.record_system_message(msg).await?;
                    turn = 0;
                    initial = true;
                    msg.woken = true;
                    continue;
                }
                if mode != AgentMode::Autopilot || msg.task_completed {
                    break;
                }
                if continues >= self.parts.config.max_autopilot_continues {
                    self.emitter.emit(&SessionWarning {
                    warning_type: "autopilot".into(),
                    message: format!(
                        "autopilot stopped after {continues} continuations without task_complete"
                    ),
                    ..Default::default()
                })?;
                    break;
                }
                continues += 1;
                // The agent loop stopped before the nudge starts it again: the runtime says so.
                self.emitter.emit(&AssistantIdle { aborted: None })?;
                // The runtime restarts turn ids after a nudge within the same interaction.
                turn = 0;
                initial = true;
                self.emitter.emit(&UserMessage {
                    content: String::new(),
                    transformed_content: Some(self.wrap(NUDGE, AgentMode::Autopilot)),
                    source: Some("system".into()),
                    message_id: Some(Uuid::new_v4().to_string()),
                    attachments: Some(Vec::new()),
                    supported_native_document_mime_types: Some(Vec::new()),
                    agent_mode: Some(AgentMode::Autopilot.as_str().into()),
                    is_autopilot_continuation: Some(true),
                    delivery: Some(IDLE_DELIVERY.into()),
                    interaction_id: Some(msg.interaction_id.clone()),
                    ..Default::default()
                })?;
            }
            agents.drain(self).await?;
            // Before the idle: an `agentStop` block keeps the agent going with the hook's reason as
            // a queued prompt in a new interaction, and the client waits for that one's idle.
            if !msg.cancel.is_cancelled()
                && msg.stop_blocks < MAX_STOP_BLOCKS
                && let Some(reason) = self.agent_stop_hook(msg.stop_blocks > 0).await?
            {
                msg.stop_blocks += 1;
                msg.interaction_id = Uuid::new_v4().to_string();
                let transformed = self.prompt_hook(&reason).await?;
                self.record_user_message(reason, transformed, &[], msg, true)
                    .await?;
                first_turn = 0;
                continue;
            }
            break;
        }
        self.idle(mode, false).await?;
        Ok(Outcome::Idle)
    }
}
