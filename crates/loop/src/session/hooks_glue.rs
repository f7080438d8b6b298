//! The loop's side of hooks: each run recorded as `hook.start`/`hook.end`, and the prompt
//! rewrites of `userPromptSubmitted` and `userPromptTransformed`.

use serde_json::{Value, json};
use turnstile_journal::Uuid;
use turnstile_journal::payload::{HookEnd, HookError, HookStart};

use super::LoopError;
use super::actor::Actor;

impl Actor {
    pub(super) async fn prompt_hook(&self, prompt: &str) -> Result<String, LoopError> {
        let out = self
            .hook("userPromptSubmitted", json!({"prompt": prompt}), None)
            .await?;
        Ok(out
            .as_ref()
            .and_then(|o| o.get("modifiedPrompt"))
            .and_then(Value::as_str)
            .map_or_else(|| prompt.to_owned(), str::to_owned))
    }

    /// `userPromptTransformed`: the hook sees the prompt and the text the model will read
    /// (`transformedContent`, with its date and reminders) and may replace that text.
    pub(super) async fn transformed_prompt_hook(
        &self,
        prompt: &str,
        transformed: String,
    ) -> Result<String, LoopError> {
        let out = self
            .hook(
                "userPromptTransformed",
                json!({"prompt": prompt, "transformedPrompt": transformed}),
                None,
            )
            .await?;
        Ok(out
            .as_ref()
            .and_then(|o| o.get("modifiedTransformedPrompt"))
            .and_then(Value::as_str)
            .map_or(transformed, str::to_owned))
    }

    /// `agentStop`: the agent finished answering; a `block` decision keeps it going, with the
    /// hook's reason as the next prompt (returned). `stop_hook_active` tells the hook a block
    /// already kept this message going, so it can let it stop.
    pub(super) async fn agent_stop_hook(
        &self,
        stop_hook_active: bool,
    ) -> Result<Option<String>, LoopError> {
        let transcript = self.emitter.writer().paths().events.clone();
        let out = self
            .hook(
                "agentStop",
                json!({
                    "transcriptPath": transcript,
                    "stopReason": "end_turn",
                    "stop_hook_active": stop_hook_active,
                }),
                None,
            )
            .await?;
        let Some(out) = out else {
            return Ok(None);
        };
        if out.get("decision").and_then(Value::as_str) != Some("block") {
            return Ok(None);
        }
        // A block without a reason still continues, as the runtime does, with a neutral prompt.
        Ok(Some(
            out.get("reason")
                .and_then(Value::as_str)
                .filter(|r| !r.is_empty())
                .unwrap_or("Continue.")
                .to_owned(),
        ))
    }

    pub(super) async fn hook_notify(&self, hook_type: &str, input: Value) {
        if let Err(e) = self.hook(hook_type, input, None).await {
            tracing::warn!(session = %self.id, error = %e, hook_type, "could not record a hook run");
        }
    }

    /// Runs the hooks of a kind, recorded as `hook.start`/`hook.end`. A failing hook is an
    /// error in `hook.end` and yields no output; only a journal failure is an `Err`.
    pub(super) async fn hook(
        &self,
        hook_type: &str,
        input: Value,
        tool_call_id: Option<&str>,
    ) -> Result<Option<Value>, LoopError> {
        self.hook_recorded(hook_type, input, tool_call_id, Value::clone)
            .await
    }

    /// [`Self::hook`], with the output recorded in `hook.end` as `recorded` makes it (what a
    /// hook returns may hold what the journal must not, as a `preMcpToolCall`'s `_meta`).
    pub(super) async fn hook_recorded(
        &self,
        hook_type: &str,
        mut input: Value,
        tool_call_id: Option<&str>,
        recorded: fn(&Value) -> Value,
    ) -> Result<Option<Value>, LoopError> {
        let Some(hooks) = self.parts.hooks.clone().filter(|h| h.handles(hook_type)) else {
            return Ok(None);
        };
        if let Some(obj) = input.as_object_mut() {
            obj.insert(
                "timestamp".into(),
                json!(turnstile_journal::Timestamp::now().millis()),
            );
            obj.entry("cwd")
                .or_insert_with(|| json!(self.parts.config.cwd));
            obj.insert("sessionId".into(), json!(self.id.to_string()));
        }
        let invocation = Uuid::new_v4().to_string();
        self.emitter.emit(&HookStart {
            hook_invocation_id: invocation.clone(),
            hook_type: hook_type.to_owned(),
            input: Some(input.clone()),
            parent_tool_call_id: tool_call_id.map(str::to_owned),
        })?;
        let result = hooks.invoke(hook_type, input).await;
        let (output, error) = match result {
            Ok(out) => (out, None),
            Err(e) => (None, Some(e.to_string())),
        };
        self.emitter.emit(&HookEnd {
            hook_invocation_id: invocation,
            hook_type: hook_type.to_owned(),
            output: output.as_ref().map(recorded),
            success: error.is_none(),
            error: error.map(|message| HookError {
                message,
                ..Default::default()
            }),
            parent_tool_call_id: tool_call_id.map(str::to_owned),
        })?;
        Ok(output)
    }
}
