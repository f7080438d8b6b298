//! Working with an open session: `session.send`, `session.abort`, `session.getMessages`,
//! `session.mode.get`/`session.mode.set`, `session.model.getCurrent`, `session.name.*`,
//! `session.getForeground`/`setForeground`.

use serde::Deserialize;
use serde_json::{Value, json};
use turnstile_loop::prompt::Attachment;
use turnstile_loop::{AgentMode, SendOptions};

use super::Ctx;
use super::lifecycle::persisted_events;
use super::open_session;
use super::session_id_params::SessionIdParams;
use crate::rpc::{RpcError, codes};
use crate::sessions::OpenSession;

/// `session.send` params (the schema's; the ones not listed are accepted and ignored).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SendParams {
    session_id: String,
    prompt: String,
    attachments: Option<Vec<Attachment>>,
    /// Extra HTTP headers of this message's model calls.
    request_headers: Option<std::collections::BTreeMap<String, String>>,
    /// "enqueue" or "immediate"; both queue behind a running message here.
    mode: Option<String>,
    agent_mode: Option<String>,
}

/// `session.send`: queues the prompt and answers with its `messageId` at once; the events
/// follow as `session.event` notifications.
pub(crate) fn send(ctx: &Ctx<'_>, params: SendParams) -> Result<Value, RpcError> {
    let (_, message_id) = queue(ctx, params)?;
    Ok(json!({"messageId": message_id}))
}

/// `session.sendAndWait` (the Python client's): queues the prompt and answers once the message
/// completed, after its `session.idle` was sent: `{completionEventId, response, aborted}`
/// (`response` is the last `assistant.message`). A failed model call is an error whose data
/// carries the `completionEventId`.
pub(crate) async fn send_and_wait(ctx: &Ctx<'_>, params: SendParams) -> Result<Value, RpcError> {
    let (session, message_id) = queue(ctx, params)?;
    let completion = session.completion(&message_id);
    let done = tokio::select! {
        done = completion => done.map_err(|_| RpcError::new(
            codes::SESSION_FAILED,
            format!("session {} was closed before message {message_id} completed", session.id()),
        ))?,
        // Never keep a gone client's handler waiting: the connection waits for its handlers.
        _ = ctx.peer.closed() => return Err(RpcError::new(codes::SESSION_FAILED, "the client disconnected")),
    };
    if let Some(message) = done.error {
        let mut error = RpcError::new(codes::SESSION_FAILED, message);
        error.data = Some(Box::new(json!({"completionEventId": done.idle_id})));
        return Err(error);
    }
    Ok(json!({
        "completionEventId": done.idle_id,
        "response": done.response,
        "aborted": done.aborted,
    }))
}

/// Validates and queues a send; returns the session and the `messageId`.
fn queue(
    ctx: &Ctx<'_>,
    params: SendParams,
) -> Result<(std::sync::Arc<crate::sessions::OpenSession>, String), RpcError> {
    let session = open_session(ctx, &params.session_id)?;
    if let Some(mode) = params.mode.as_deref()
        && !matches!(mode, "enqueue" | "immediate")
    {
        return Err(RpcError::invalid_params(format!(
            "mode {mode:?} is not one of enqueue, immediate"
        )));
    }
    let mode = match params.agent_mode.as_deref() {
        None => session.info().mode,
        Some(name) => parse_mode(name, "agentMode")?,
    };
    let (message_id, _done) = session
        .handle()
        .send(
            params.prompt,
            SendOptions {
                mode: Some(mode),
                attachments: params.attachments.unwrap_or_default(),
                request_headers: request_headers(params.request_headers)?,
            },
        )
        .map_err(|e| RpcError::new(codes::SESSION_FAILED, e.to_string()))?;
    Ok((session, message_id))
}

/// The `requestHeaders` of a send, refused when one could not be sent as an HTTP header (the
/// provider would fail every call of the message otherwise).
fn request_headers(
    headers: Option<std::collections::BTreeMap<String, String>>,
) -> Result<Vec<(String, String)>, RpcError> {
    let mut out = Vec::new();
    for (name, value) in headers.unwrap_or_default() {
        let valid_name = !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
        if !valid_name {
            return Err(RpcError::invalid_params(format!(
                "requestHeaders: {name:?} is not a valid HTTP header name"
            )));
        }
        if value.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
            return Err(RpcError::invalid_params(format!(
                "requestHeaders: the value of {name:?} holds a line break or NUL"
            )));
        }
        out.push((name, value));
    }
    Ok(out)
}

fn parse_mode(name: &str, field: &str) -> Result<AgentMode, RpcError> {
    AgentMode::parse(name).ok_or_else(|| {
        RpcError::invalid_params(format!(
            "{field} {name:?} is not supported (supported: interactive, autopilot, plan)"
        ))
    })
}

/// `session.abort` params.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AbortParams {
    session_id: String,
    /// The schema's `AbortReason`; the journal records `user_initiated` either way.
    #[allow(dead_code)]
    reason: Option<String>,
}

/// `session.abort`: cancels the running message (`abort`, interrupted tools, then
/// `session.idle {aborted: true}`).
pub(crate) fn abort(ctx: &Ctx<'_>, params: AbortParams) -> Result<Value, RpcError> {
    let session = open_session(ctx, &params.session_id)?;
    if !session.handle().is_busy() {
        return Ok(json!({"success": false, "error": "the session is idle: nothing to abort"}));
    }
    session.handle().abort();
    session.bridge().interrupt_hooks();
    Ok(json!({"success": true}))
}

/// `session.getMessages`: the session's persisted events, in journal order. Only a session
/// open in this server has them, as in the Copilot CLI: after `session.destroy` the client
/// resumes it first (the answer is `SESSION_NOT_FOUND` naming why it is closed).
pub(crate) fn messages(ctx: &Ctx<'_>, params: SessionIdParams) -> Result<Value, RpcError> {
    let session = open_session(ctx, params.id())?;
    let paths = ctx.server.config().state_root.session(session.id());
    Ok(json!({"events": persisted_events(&paths.events)?}))
}

/// `session.mode.get`.
pub(crate) fn mode_get(ctx: &Ctx<'_>, params: SessionIdParams) -> Result<Value, RpcError> {
    let session = open_session(ctx, params.id())?;
    Ok(json!(session.info().mode.as_str()))
}

/// `session.mode.set` params.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ModeSetParams {
    session_id: String,
    mode: String,
    expected_mode: Option<String>,
}

/// `session.mode.set`: the mode of the following sends that name none, recorded as
/// `session.mode_changed` when it changes.
pub(crate) async fn mode_set(ctx: &Ctx<'_>, params: ModeSetParams) -> Result<Value, RpcError> {
    let session = open_session(ctx, &params.session_id)?;
    let mode = parse_mode(&params.mode, "mode")?;
    let current = session.info().mode;
    if let Some(expected) = params.expected_mode.as_deref()
        && expected != current.as_str()
    {
        return Ok(json!({
            "status": "conflict",
            "modelChanged": false,
            "modeApplied": false,
            "message": format!("the mode is {}, not {expected}", current.as_str()),
        }));
    }
    session
        .handle()
        .set_mode(mode)
        .await
        .map_err(|e| RpcError::new(codes::SESSION_FAILED, e.to_string()))?;
    session.set_mode(mode);
    Ok(json!({"status": "applied", "modelChanged": false, "modeApplied": true}))
}

/// `session.model.getCurrent`.
pub(crate) fn model_current(ctx: &Ctx<'_>, params: SessionIdParams) -> Result<Value, RpcError> {
    let session = open_session(ctx, params.id())?;
    Ok(current_model(&session))
}

/// `session.model.switchTo` params.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SwitchToParams {
    session_id: String,
    model_id: String,
    reasoning_effort: Option<String>,
    /// What the model can do (`supports.vision`), for the calls that follow.
    model_capabilities: Option<super::open_params::ModelCapabilitiesParams>,
}

/// `session.model.switchTo`: the calls after the messages sent before it use `modelId`
/// (recorded as `session.model_change`); answers `{modelId, deferred: false}` as the Copilot
/// CLI does.
pub(crate) async fn model_switch(ctx: &Ctx<'_>, params: SwitchToParams) -> Result<Value, RpcError> {
    let session = open_session(ctx, &params.session_id)?;
    let model = params.model_id.trim();
    if model.is_empty() {
        return Err(RpcError::invalid_params("modelId must not be empty"));
    }
    session
        .handle()
        .switch_model(model, params.reasoning_effort.clone())
        .await
        .map_err(|e| RpcError::new(codes::SESSION_FAILED, e.to_string()))?;
    if let Some(vision) = params.model_capabilities.as_ref().and_then(|c| c.vision()) {
        session
            .handle()
            .set_vision(vision)
            .await
            .map_err(|e| RpcError::new(codes::SESSION_FAILED, e.to_string()))?;
    }
    session.set_model(model.to_owned(), params.reasoning_effort);
    Ok(json!({"modelId": model, "deferred": false}))
}

/// `session.model.getCurrent` with the reasoning effort, when one is set.
fn current_model(session: &crate::sessions::OpenSession) -> Value {
    let info = session.info();
    let mut value = json!({"modelId": info.model});
    if let Some(effort) = info.reasoning_effort {
        value["reasoningEffort"] = json!(effort);
    }
    value
}

/// `session.name.get`: `{name}` (null until set).
pub(crate) fn name_get(ctx: &Ctx<'_>, params: SessionIdParams) -> Result<Value, RpcError> {
    let session = open_session(ctx, params.id())?;
    Ok(json!({"name": session.info().name}))
}

/// `session.name.set` params.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct NameSetParams {
    session_id: String,
    name: String,
}

/// Longest name (the schema's); `session.name.setAuto` cuts a longer one to it.
pub(crate) const MAX_NAME_CHARS: usize = 100;

/// `session.name.set`: 1 to 100 characters once trimmed (an empty one refused in the runtime's
/// words), kept in `workspace.yaml` as a user's name; announces `session.title_changed`
/// (ephemeral, as in the Copilot CLI) and answers `null`.
pub(crate) async fn name_set(ctx: &Ctx<'_>, params: NameSetParams) -> Result<Value, RpcError> {
    let session = open_session(ctx, &params.session_id)?;
    let name = params.name.trim();
    let chars = name.chars().count();
    // The runtime's words: clients match them ("empty").
    if chars == 0 {
        return Err(RpcError::invalid_params("Session name cannot be empty"));
    }
    if chars > MAX_NAME_CHARS {
        return Err(RpcError::invalid_params(format!(
            "Session name must be {MAX_NAME_CHARS} characters or less (got {chars})"
        )));
    }
    apply_name(ctx, &session, name, true).await?;
    Ok(Value::Null)
}

/// Names `session`: announced (`session.title_changed`), held by the server's record of it,
/// and kept in `workspace.yaml` with `user_named` (a name the client made up is not a user's).
pub(crate) async fn apply_name(
    ctx: &Ctx<'_>,
    session: &OpenSession,
    name: &str,
    user_named: bool,
) -> Result<(), RpcError> {
    session
        .handle()
        .set_name(name)
        .await
        .map_err(|e| RpcError::new(codes::SESSION_FAILED, e.to_string()))?;
    session.set_name(name.to_owned());
    let dir = ctx.server.config().state_root.session(session.id()).dir;
    write_name(&dir, name, user_named);
    Ok(())
}

/// Keeps the session's name where the Copilot CLI keeps it, in `workspace.yaml` (with
/// `user_named`), so a listing, a resume and `session.name.setAuto` see it. Best effort, as
/// every write of that file: the session depends on none of it.
pub(crate) fn write_name(dir: &std::path::Path, name: &str, user_named: bool) {
    let now = turnstile_journal::Timestamp::now().to_text();
    if let Err(e) = turnstile_home::workspace::set_name(dir, name, user_named, &now) {
        tracing::warn!(dir = %dir.display(), error = %e, "the session's name was not written to workspace.yaml");
    }
}

/// `session.getForeground`: a headless runtime has no foreground session (`{}`, as the
/// Copilot CLI answers).
pub(crate) fn foreground_get() -> Value {
    json!({})
}

/// `session.setForeground`: the Copilot CLI's headless answer, word for word.
pub(crate) fn foreground_set() -> Value {
    json!({
        "success": false,
        "error": "Not running in TUI+server mode - no foreground session change handler registered",
    })
}
