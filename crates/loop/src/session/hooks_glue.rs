//! The loop's side of hooks: each run recorded as `hook.start`/`hook.end`, and the prompt
//! rewrite of `userPromptSubmitted`.

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
        mut input: Value,
        tool_call_id: Option<&str>,
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
            output: output.clone(),
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
