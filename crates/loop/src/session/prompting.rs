//! What a message records about what the model will see: its attachments (assets, warnings),
//! the `user.message`, the session's title, the system prompt and the tool set; and the
//! notices of a model call (`session.usage_info`, `model.call_start`).

use turnstile_journal::payload::{
    ModelCallStart, SessionModelChange, SessionTitleChanged, SessionToolsUpdated, SessionUsageInfo,
    SessionWarning, SystemMessage, SystemMessageMetadata, UserMessage,
};
use turnstile_journal::{Timestamp, Uuid};
use turnstile_replay::Message as Conversation;

use super::LoopError;
use super::actor::Actor;
use super::message::Message;
use crate::autopilot::{AgentMode, PLAN_PREFIX};
use crate::prompt::attachments::{Prepared, prepare};
use crate::prompt::{Attachment, PromptContext, build_system_prompt, wrap_prompt};

/// `user.message` `delivery` of a message the loop took up at once.
pub(super) const IDLE_DELIVERY: &str = "idle";
/// `user.message` `delivery` of a message that waited behind another one.
pub(super) const QUEUED_DELIVERY: &str = "queued";

/// Characters of the first prompt line a session's title keeps.
const TITLE_CHARS: usize = 100;

impl Actor {
    /// Records the user's message: the assets its attachments carry, a warning per attachment
    /// problem, the `user.message` itself (`delivery` `queued` when it `waited` behind another
    /// message, else `idle`) and, for the session's first message, its title.
    pub(super) async fn record_user_message(
        &self,
        prompt: String,
        transformed: String,
        attachments: &[Attachment],
        msg: &Message<'_>,
        waited: bool,
    ) -> Result<(), LoopError> {
        let first = !self
            .emitter
            .state()
            .conversation
            .iter()
            .any(|m| matches!(m, Conversation::User { .. }));
        let prepared = if attachments.is_empty() {
            Prepared::default()
        } else {
            // Looking at files reads up to 10 MiB each: off the session's task.
            let (list, cwd) = (attachments.to_vec(), self.parts.config.cwd.clone());
            let outside = self.parts.config.allow_outside_cwd;
            tokio::task::spawn_blocking(move || prepare(&list, &cwd, outside))
                .await
                .unwrap_or_else(|e| {
                    let mut failed = Prepared::default();
                    failed
                        .warnings
                        .push(format!("the attachments could not be prepared: {e}"));
                    failed
                })
        };
        // An asset already in the journal is not written twice (ids are content hashes).
        for asset in &prepared.assets {
            if !self.emitter.state().assets.contains_key(&asset.asset_id) {
                self.emitter.emit(asset)?;
            }
        }
        for warning in &prepared.warnings {
            self.emitter.emit(&SessionWarning {
                warning_type: "attachment".into(),
                message: warning.clone(),
                ..Default::default()
            })?;
        }
        let title = first.then(|| title_of(&prompt)).flatten();
        let name = first.then(|| prompt.clone());
        let transformed = match self.tools_changed_notice() {
            Some(notice) => format!("{notice}\n\n{transformed}"),
            None => transformed,
        };
        let wrapped = self.wrap(&planned(msg.mode, transformed), msg.mode);
        let transformed = self
            .transformed_prompt_hook(&prompt, prepared.transform(&wrapped))
            .await?;
        let typed = self.file_snapshots.as_ref().map(|_| prompt.clone());
        let event = self.emitter.emit(&UserMessage {
            content: prompt,
            transformed_content: Some(transformed),
            message_id: Some(msg.message_id.clone()),
            attachments: Some(prepared.recorded),
            supported_native_document_mime_types: Some(Vec::new()),
            agent_mode: (msg.mode != AgentMode::Interactive).then(|| msg.mode.as_str().to_owned()),
            delivery: Some(
                if waited {
                    QUEUED_DELIVERY
                } else {
                    IDLE_DELIVERY
                }
                .into(),
            ),
            interaction_id: Some(msg.interaction_id.clone()),
            ..Default::default()
        })?;
        // A root user turn starts its file snapshot (a continuation's changes stay with the
        // turn it continues, as the runtime's do).
        if let (Some(snapshots), Some(typed)) = (&self.file_snapshots, typed) {
            snapshots.begin_turn(&event.id.to_string(), &typed, &event.timestamp.to_string());
        }
        if let Some(name) = name {
            // The first prompt names the session in `workspace.yaml`, as the runtime's does.
            let dir = self.emitter.writer().paths().dir.clone();
            super::workspace_file::write(
                &dir,
                &self.emitter.state(),
                &self.parts.config.client_name,
                Some(&name),
            );
        }
        if let Some(title) = title {
            self.emitter.emit(&SessionTitleChanged { title })?;
        }
        Ok(())
    }

    /// `text` as the model reads it now, with the tools offered in `mode` (`prompt::wrap`).
    pub(super) fn wrap(&self, text: &str, mode: AgentMode) -> String {
        let offered = self.tool_specs(mode);
        let first = {
            let state = self.emitter.state();
            state.counts.user_messages == 0 && state.counts.autopilot_continuations == 0
        };
        wrap_prompt(
            text,
            &Timestamp::now(),
            offered.iter().map(|t| t.name.as_str()),
            first,
        )
    }

    /// Records the system prompt before every prompt, as the runtime does (built again from the
    /// session's context and the client's `systemMessage`, so a model switch or a changed
    /// section shows in the next prompt), then announces the tools offered for this message.
    pub(super) async fn record_system_message(&self, msg: &Message<'_>) -> Result<(), LoopError> {
        let content = match &self.parts.config.system_prompt {
            Some(exact) => exact.clone(),
            None => {
                let tools = self.tool_specs(msg.mode).into_iter().map(|t| t.name);
                let mut ctx = PromptContext::discover(
                    &self.parts.config.cwd,
                    &self.parts.config.model,
                    tools.collect(),
                );
                if self.parts.config.skip_custom_instructions {
                    ctx.custom_instructions.clear();
                } else {
                    ctx.instruction_files = crate::prompt::read_instruction_dirs(
                        &self.parts.config.instruction_directories,
                    );
                }
                ctx.skills = self.parts.config.skills.enabled_descriptions();
                let transformer = self.parts.section_transformer.clone();
                build_system_prompt(
                    &self.parts.config.system_message,
                    ctx,
                    transformer.as_deref(),
                )
                .await
            }
        };
        self.emitter.emit(&SystemMessage {
            role: "system".into(),
            content,
            interaction_id: Some(msg.interaction_id.clone()),
            // The writer's name and version, where readers of the session do not look.
            metadata: Some(SystemMessageMetadata::turnstile()),
            ..Default::default()
        })?;
        self.emitter.emit(&SessionToolsUpdated {
            model: self.parts.config.model.clone(),
        })?;
        Ok(())
    }

    /// The notices right before a model call: how full the request leaves the context window
    /// (the first call of a message is `isInitial`, as the Copilot CLI reports it, and so is
    /// the first call of a message continued after a resume), then
    /// `model.call_start`. `estimate` is the request's plain estimate (measured once, with
    /// the request); returns its total, to calibrate against the server's report, and the
    /// figures announced. The usage is chained to `turn_start`, the event it was measured at,
    /// as the runtime chains it whatever was recorded in between.
    pub(super) fn announce_call(
        &self,
        estimate: &SessionUsageInfo,
        turn_id: &str,
        first_of_message: bool,
        turn_start: Uuid,
    ) -> Result<(u64, SessionUsageInfo), LoopError> {
        let mut info: SessionUsageInfo = self.calibration_now().apply(estimate);
        info.is_initial = Some(first_of_message);
        self.emitter.emit_live_after(&info, turn_start)?;
        self.emitter.emit(&ModelCallStart {
            turn_id: turn_id.to_owned(),
            model: Some(self.parts.config.model.clone()),
            ..Default::default()
        })?;
        Ok((estimate.current_tokens, info))
    }

    /// Announces a new title (ephemeral, as the Copilot CLI's `session.name.set` does).
    pub(super) fn set_title(&mut self, title: String) -> Result<(), LoopError> {
        self.emitter.emit(&SessionTitleChanged { title })?;
        Ok(())
    }

    /// Sets the mode of the sends that name none, recorded as `session.mode_changed` when it
    /// changes.
    pub(super) fn set_mode(&mut self, mode: AgentMode) -> Result<(), LoopError> {
        let previous = std::mem::replace(&mut self.parts.config.mode, mode);
        if previous != mode {
            self.emitter.emit(&SessionModeChanged {
                previous_mode: previous.as_str().into(),
                new_mode: mode.as_str().into(),
            })?;
        }
        Ok(())
    }

    /// Switches the model (and reasoning effort) of the following calls, recorded as
    /// `session.model_change`.
    pub(super) fn switch_model(
        &mut self,
        model: String,
        reasoning_effort: Option<String>,
    ) -> Result<(), LoopError> {
        let previous = std::mem::replace(&mut self.parts.config.model, model.clone());
        // The server's rate was learnt against the other model's encoding.
        *super::lock::lock(&self.calibration) = Default::default();
        crate::prompt::tokens::Encoding::for_model(&model).preload();
        let previous_effort = std::mem::replace(
            &mut self.parts.config.reasoning_effort,
            reasoning_effort.clone(),
        );
        self.emitter.emit(&SessionModelChange {
            context_tier: Some(None),
            new_model: model,
            previous_model: Some(previous),
            previous_reasoning_effort: previous_effort,
            reasoning_effort: reasoning_effort.map(Some),
            ..Default::default()
        })?;
        Ok(())
    }
}

/// The prompt the model reads: in plan mode, after [`PLAN_PREFIX`].
fn planned(mode: AgentMode, prompt: String) -> String {
    if mode == AgentMode::Plan {
        format!("{PLAN_PREFIX}{prompt}")
    } else {
        prompt
    }
}

/// `session.mode_changed`: the mode of the sends that name none changed (the schema's
/// `ModeChangedData`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct SessionModeChanged {
    /// The mode before.
    previous_mode: String,
    /// The mode now.
    new_mode: String,
}

impl turnstile_journal::payload::Payload for SessionModeChanged {
    const TYPE: &'static str = "session.mode_changed";
}

/// A title from a prompt: its first non-empty line, cut to [`TITLE_CHARS`] characters.
fn title_of(prompt: &str) -> Option<String> {
    let line = prompt.lines().map(str::trim).find(|l| !l.is_empty())?;
    Some(line.chars().take(TITLE_CHARS).collect())
}

#[cfg(test)]
mod tests {
    use super::title_of;

    #[test]
    fn titles_are_the_first_line_cut_short() {
        assert_eq!(title_of("Please do it").as_deref(), Some("Please do it"));
        assert_eq!(title_of("\n  fix it \nmore").as_deref(), Some("fix it"));
        assert_eq!(
            title_of("é".repeat(300).as_str()).unwrap().chars().count(),
            100
        );
        assert_eq!(title_of("  \n"), None);
    }
}
