//! `session.commands.*`: the session's slash commands, the engine's built-ins
//! (`command_builtins`) and the ones its clients registered (`client_commands`). A client's
//! command runs in that client: the session announces `command.execute`, the client runs its
//! handler and answers `handlePendingCommand`, the session announces `command.completed`; all
//! three are ephemeral in the Copilot CLI, and a command changes no state a resume must know.

use serde::Deserialize;
use serde_json::{Value, json};
use turnstile_journal::Uuid;
use turnstile_journal::payload::{CommandCompleted, CommandExecute};

use super::{Ctx, command_builtins, open_session};
use crate::client_commands::RunOutcome;
use crate::rpc::{RpcError, codes};
use crate::sessions::OpenSession;
use turnstile_loop::session::EnqueueError;

/// `session.commands.list` params: which sources to list, all when left out (the engine has
/// no command skills: `includeSkills` lists none).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ListParams {
    session_id: String,
    include_builtins: Option<bool>,
    include_client_commands: Option<bool>,
}

/// `session.commands.list`: `{commands}`, the built-ins first, then the clients'.
pub(crate) fn list(ctx: &Ctx<'_>, params: ListParams) -> Result<Value, RpcError> {
    let session = open_session(ctx, &params.session_id)?;
    let mut commands = Vec::new();
    if params.include_builtins != Some(false) {
        commands.extend(command_builtins::listed());
    }
    if params.include_client_commands != Some(false) {
        commands.extend(session.commands().all().into_iter().map(|c| {
            json!({
                "name": c.name,
                "description": c.description.unwrap_or_default(),
                "kind": "client",
                "allowDuringAgentExecution": false,
            })
        }));
    }
    Ok(json!({ "commands": commands }))
}

/// Runs the client command `name` in its client and waits for the answer.
async fn run_client(session: &OpenSession, name: &str, args: &str) -> Result<RunOutcome, RpcError> {
    let request_id = Uuid::new_v4().to_string();
    let answer = session
        .commands()
        .wait(&request_id)
        .map_err(|e| RpcError::new(codes::SERVER_BUSY, e.to_string()))?;
    let command = if args.is_empty() {
        format!("/{name}")
    } else {
        format!("/{name} {args}")
    };
    session.handle().announce(&CommandExecute {
        request_id: request_id.clone(),
        command,
        command_name: name.to_owned(),
        args: args.to_owned(),
    });
    let outcome = tokio::select! {
        answer = answer => answer.unwrap_or_else(|_| Err("the command's client left".to_owned())),
        () = session.wait_closed() => Err("the session closed".to_owned()),
    };
    session.handle().announce(&CommandCompleted { request_id });
    Ok(outcome)
}

/// `session.commands.invoke` params.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct InvokeParams {
    session_id: String,
    name: String,
    input: Option<String>,
}

/// Runs `/name input`: a built-in here, a client's command in its client.
async fn invoke_in(session: &OpenSession, name: &str, input: &str) -> Result<Value, RpcError> {
    let name = name.trim_start_matches('/');
    let lower = name.to_lowercase();
    if let Some(answer) = command_builtins::invoke(session, &lower, input).await {
        return answer;
    }
    match session.commands().find(name) {
        Some(command) => match run_client(session, &command.name, input).await? {
            Ok(()) => Ok(json!({"kind": "completed"})),
            Err(error) => Err(RpcError::new(codes::INTERNAL_ERROR, error)),
        },
        None => Err(RpcError::new(
            codes::INTERNAL_ERROR,
            format!("Unknown slash command: /{name}"),
        )),
    }
}

/// `session.commands.invoke`: the schema's `SlashCommandInvocationResult`; an unknown
/// command is the runtime's "Unknown slash command: /<name>".
pub(crate) async fn invoke(ctx: &Ctx<'_>, params: InvokeParams) -> Result<Value, RpcError> {
    let session = open_session(ctx, &params.session_id)?;
    invoke_in(
        &session,
        &params.name,
        params.input.as_deref().unwrap_or_default(),
    )
    .await
}

/// `session.commands.execute` params.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ExecuteParams {
    session_id: String,
    command_name: String,
    args: String,
}

/// `session.commands.execute`: runs a client's command and waits for it; `{}`, or `{error}`
/// with the client's error, or the runtime's "No client found for command: <name>" for a
/// name no client registered (built-ins included, as in the Copilot CLI).
pub(crate) async fn execute(ctx: &Ctx<'_>, params: ExecuteParams) -> Result<Value, RpcError> {
    let session = open_session(ctx, &params.session_id)?;
    let Some(command) = session.commands().find(&params.command_name) else {
        return Ok(json!({
            "error": format!("No client found for command: {}", params.command_name),
        }));
    };
    Ok(
        match run_client(&session, &command.name, &params.args).await? {
            Ok(()) => json!({}),
            Err(error) => json!({ "error": error }),
        },
    )
}

/// `session.commands.enqueue` params. `displayText` is accepted and not shown: the Copilot
/// CLI lists a queued command by its command line (`session.queue.pendingItems`).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct EnqueueParams {
    session_id: String,
    command: String,
}

/// `session.commands.enqueue`: `{queued: true}`; the command joins the session's queue
/// behind what was sent before it (`turnstile_loop`'s `queued_command.rs`). It is handed to
/// the host when a client registered interest in `command.queued`, and dropped when taken
/// otherwise: the Copilot CLI runs no queued command itself, built-ins and the clients'
/// commands included. `{queued: false}` when the queue is full.
pub(crate) fn enqueue(ctx: &Ctx<'_>, params: EnqueueParams) -> Result<Value, RpcError> {
    let session = open_session(ctx, &params.session_id)?;
    let hosted = session.has_interest(COMMAND_QUEUED);
    match session.handle().enqueue_command(params.command, hosted) {
        Ok(()) => Ok(json!({"queued": true})),
        Err(EnqueueError::Refused(e)) => {
            tracing::info!(session = %session.id(), "command not queued: {e}");
            Ok(json!({"queued": false}))
        }
        Err(EnqueueError::Closed(e)) => Err(RpcError::new(codes::SESSION_FAILED, e.to_string())),
    }
}

/// The event a host registers interest in to take queued commands.
const COMMAND_QUEUED: &str = "command.queued";

/// `session.commands.respondToQueuedCommand` params (`result` is `{handled}` or
/// `{handled: true, stopProcessingQueue}`).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RespondParams {
    session_id: String,
    request_id: String,
    result: QueuedCommandResult,
}

/// The host's `QueuedCommandResult`: whether it ran the command is not the session's
/// concern; only whether the queue behind it goes on.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct QueuedCommandResult {
    #[allow(dead_code)]
    handled: bool,
    stop_processing_queue: Option<bool>,
}

/// `session.commands.respondToQueuedCommand`: `{success}`, true when the held command had
/// this id (it ends with `command.completed`, and `stopProcessingQueue` drops what waits
/// behind it); false for an id no command is held under (unknown, answered, or aborted).
pub(crate) fn respond_to_queued(ctx: &Ctx<'_>, params: RespondParams) -> Result<Value, RpcError> {
    let session = open_session(ctx, &params.session_id)?;
    let stop = params.result.stop_processing_queue == Some(true);
    let success = session
        .handle()
        .answer_queued_command(&params.request_id, stop);
    Ok(json!({ "success": success }))
}

/// `session.commands.handlePendingCommand` params.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct HandlePendingParams {
    session_id: String,
    request_id: String,
    error: Option<String>,
}

/// `session.commands.handlePendingCommand`: the client ran (or failed to run) a command;
/// `{success: true}`, for a `requestId` no run waits for too, as the Copilot CLI answers.
pub(crate) fn handle_pending(
    ctx: &Ctx<'_>,
    params: HandlePendingParams,
) -> Result<Value, RpcError> {
    let session = open_session(ctx, &params.session_id)?;
    let outcome = params.error.map_or(Ok(()), Err);
    let matched = session.commands().answer(&params.request_id, outcome);
    if !matched {
        tracing::debug!(session = %session.id(), request = %params.request_id, "no command run waits for this answer");
    }
    Ok(json!({"success": true}))
}
