//! What a client takes over from the engine, over JSON-RPC: its tools
//! ([`ExternalTools`]), permission decisions ([`PermissionAsker`]) and hooks ([`HookRunner`]).
//!
//! Tool calls and permission requests are broadcast as session events
//! (`external_tool.requested`, `permission.requested`) and answered by the client with
//! `session.tools.handlePendingToolCall` / `session.permissions.handlePendingPermissionRequest`.
//! The loop records the event before it asks us, and the client answers after it saw the
//! event, so either side may come first: a request id gets a slot as soon as the session's
//! forwarder sees the event (before the notification is written, so no answer can precede
//! it) or as soon as the loop asks, whichever is first. Hooks are server-to-client requests
//! (`hooks.invoke`).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;
use turnstile_journal::Event;
use turnstile_loop::client::{AskError, ExternalToolCall, ExternalTools, PermissionAsker};
use turnstile_loop::hooks::{HOOK_TYPES, HookRunError, HookRunner};
use turnstile_tools::{BoxFuture, INTERRUPTED_MESSAGE, ToolFailure, ToolOutput, ToolSpec};

use crate::client_tools::ClientTools;
use crate::elicitation_peers::ElicitationPeers;
use crate::peer::Peer;

/// A client's answer to one tool call.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ToolAnswer {
    /// The tool's result: a success, or a failure the client words for the model.
    Result(Result<ToolOutput, ToolFailure>),
    /// The client's handler threw (`error` of `handlePendingToolCall`). Its message is the
    /// client's business: it is logged, and the model reads the runtime's fixed words.
    Threw(String),
}

/// The message of a call whose handler threw, as recorded in `tool.execution_complete`.
const THREW_MESSAGE: &str = "Tool execution failed";

/// What the model reads of a call whose handler threw: the runtime's words, with the
/// arguments as compact JSON (in the model's key order).
fn threw_text(tool_name: &str, arguments: &Value) -> String {
    format!(
        "Failed to execute `{tool_name}` tool with arguments: {arguments} due to error: Error: {THREW_MESSAGE}"
    )
}

/// An answer for a request this session never announced.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no request {0} was announced by this session")]
pub(crate) struct UnknownRequest(pub String);

/// What happened to an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Delivery {
    /// The engine takes it.
    Taken,
    /// The request is over (answered already, decided by the policy, aborted): the answer
    /// changes nothing.
    Moot,
}

/// Finished request ids remembered, so that a late answer is told apart from a wrong id.
const REMEMBERED_FINISHED: usize = 1024;

/// Requests waiting for a client's answer, by request id.
struct Pending<T> {
    slots: Mutex<Slots<T>>,
}

struct Slots<T> {
    open: HashMap<String, Slot<T>>,
    finished: VecDeque<String>,
}

struct Slot<T> {
    tx: Option<oneshot::Sender<T>>,
    rx: Option<oneshot::Receiver<T>>,
}

impl<T> Slots<T> {
    fn is_finished(&self, id: &str) -> bool {
        self.finished.iter().any(|f| f == id)
    }

    fn finish(&mut self, id: &str) {
        self.open.remove(id);
        if !self.is_finished(id) {
            if self.finished.len() == REMEMBERED_FINISHED {
                self.finished.pop_front();
            }
            self.finished.push_back(id.to_owned());
        }
    }
}

impl<T> Pending<T> {
    fn new() -> Self {
        Pending {
            slots: Mutex::new(Slots {
                open: HashMap::new(),
                finished: VecDeque::new(),
            }),
        }
    }

    fn slots(&self) -> std::sync::MutexGuard<'_, Slots<T>> {
        self.slots
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Makes sure a slot exists for `id` (unless its request is over).
    fn expect(&self, id: &str) {
        let mut slots = self.slots();
        if slots.is_finished(id) {
            return;
        }
        slots.open.entry(id.to_owned()).or_insert_with(|| {
            let (tx, rx) = oneshot::channel();
            Slot {
                tx: Some(tx),
                rx: Some(rx),
            }
        });
    }

    /// The receiving end for `id` (creating the slot when the event was not seen yet).
    fn receiver(&self, id: &str) -> Option<oneshot::Receiver<T>> {
        self.expect(id);
        self.slots().open.get_mut(id).and_then(|s| s.rx.take())
    }

    /// Delivers an answer; a request takes one answer, later ones are moot.
    fn answer(&self, id: &str, value: T) -> Result<Delivery, UnknownRequest> {
        let mut slots = self.slots();
        let Some(slot) = slots.open.get_mut(id) else {
            return if slots.is_finished(id) {
                Ok(Delivery::Moot)
            } else {
                Err(UnknownRequest(id.to_owned()))
            };
        };
        let Some(tx) = slot.tx.take() else {
            return Ok(Delivery::Moot);
        };
        // The loop may have stopped waiting (abort): then the answer is moot.
        let taken = tx.send(value).is_ok();
        if slot.rx.is_none() || !taken {
            // The engine holds (or dropped) the receiver: nothing more can come of this id.
            slots.finish(id);
        }
        Ok(if taken {
            Delivery::Taken
        } else {
            Delivery::Moot
        })
    }

    /// Marks `id` over (its completion event was seen).
    fn forget(&self, id: &str) {
        self.slots().finish(id);
    }

    /// Whether a request waits for its answer (an answer kept before the engine asked is
    /// not waiting).
    fn waiting(&self) -> bool {
        self.slots().open.values().any(|s| s.tx.is_some())
    }

    /// Fails every waiter (their receivers see the sender dropped).
    fn clear(&self) {
        self.slots().open.clear();
    }
}

/// How a session's client participates, as declared in `session.create`/`session.resume`.
#[derive(Debug, Clone, Default)]
pub(crate) struct ClientCapabilities {
    /// Tools the client implements.
    pub tools: Vec<ToolSpec>,
    /// The client answers `permission.requested`.
    pub permissions: bool,
    /// The client registered hooks.
    pub hooks: bool,
    /// The client answers `elicitation.requested` (`requestElicitation`).
    pub elicitation: bool,
}

/// One session's link to its client.
pub(crate) struct ClientBridge {
    session_id: String,
    peer: Arc<Peer>,
    capabilities: ClientCapabilities,
    tool_calls: Pending<ToolAnswer>,
    permissions: Pending<Value>,
    /// Elicitations (`session.ui.elicitation`) waiting for a client's answer.
    elicitations: Pending<Value>,
    /// The session's connections that answer elicitations.
    elicitation_peers: ElicitationPeers,
    /// The tools the session's connections implement.
    tools: ClientTools,
    /// Whether a connection that has the session open is still there, once the session is
    /// registered (`follow_connections`); before, the opening connection alone counts. A
    /// call or a permission request waits while any is: another client may answer it.
    any_open: std::sync::OnceLock<Box<dyn Fn() -> bool + Send + Sync>>,
    /// The prompts (`promptRequest`, else `permissionRequest`) of permission requests not completed yet, in request
    /// order, for `session.permissions.pendingRequests`.
    prompts: Mutex<Vec<(String, Value)>>,
    /// Cancels the hook calls in flight (abort, close); replaced after each use so that later
    /// hooks (`sessionEnd` while closing) still run.
    hooks_in_flight: Mutex<CancellationToken>,
}

impl ClientBridge {
    /// A bridge for `session_id` to the client behind `peer`.
    pub(crate) fn new(
        session_id: String,
        peer: Arc<Peer>,
        mut capabilities: ClientCapabilities,
    ) -> Self {
        // The tools live in `tools` from here on, by connection; a copy left in the
        // capabilities would go stale when another client joins or leaves.
        let tools = std::mem::take(&mut capabilities.tools);
        ClientBridge {
            elicitation_peers: ElicitationPeers::opened_by(peer.id(), capabilities.elicitation),
            tools: ClientTools::declared_by(peer.id(), tools),
            any_open: std::sync::OnceLock::new(),
            session_id,
            peer,
            capabilities,
            tool_calls: Pending::new(),
            permissions: Pending::new(),
            elicitations: Pending::new(),
            prompts: Mutex::new(Vec::new()),
            hooks_in_flight: Mutex::new(CancellationToken::new()),
        }
    }

    /// Watches the session's events for requests the client will answer; called by the
    /// forwarder for every event before the event is sent to the client.
    pub(crate) fn observe(&self, event: &Event) {
        let kind = event.event_type.as_str();
        if !matches!(
            kind,
            "external_tool.requested"
                | "external_tool.completed"
                | "permission.requested"
                | "permission.completed"
        ) {
            return;
        }
        let data: Value = serde_json::from_str(event.data.get()).unwrap_or_default();
        let Some(id) = data["requestId"].as_str() else {
            return;
        };
        match kind {
            "permission.requested" => {
                // The prompt, else the request itself (whose fields the prompt repeats).
                let prompt = data
                    .get("promptRequest")
                    .or_else(|| data.get("permissionRequest"));
                if let Some(prompt) = prompt {
                    let mut prompts = self.lock_prompts();
                    if !prompts.iter().any(|(open, _)| open == id) {
                        prompts.push((id.to_owned(), prompt.clone()));
                    }
                }
            }
            "permission.completed" => self.lock_prompts().retain(|(open, _)| open != id),
            _ => {}
        }
        match kind {
            "external_tool.requested" => self.tool_calls.expect(id),
            "external_tool.completed" => self.tool_calls.forget(id),
            "permission.requested" if self.capabilities.permissions => self.permissions.expect(id),
            "permission.completed" => self.permissions.forget(id),
            _ => {}
        }
    }

    /// The session's connections that answer elicitations.
    pub(crate) fn elicitation_peers(&self) -> &ElicitationPeers {
        &self.elicitation_peers
    }

    /// The tools the session's connections implement.
    pub(crate) fn tools(&self) -> &ClientTools {
        &self.tools
    }

    /// From now on a request is given up only when `any_open` says no connection of the
    /// session is left (set once, when the session is registered).
    pub(crate) fn follow_connections(&self, any_open: impl Fn() -> bool + Send + Sync + 'static) {
        // A second call would be a second registration of the same bridge: the first stays.
        let _ = self.any_open.set(Box::new(any_open));
    }

    /// Whether no client is left to answer a request.
    fn no_client_left(&self) -> bool {
        match self.any_open.get() {
            Some(any_open) => !any_open(),
            None => self.peer.is_closed(),
        }
    }

    /// Takes the client's answer to a tool call.
    pub(crate) fn answer_tool(
        &self,
        request_id: &str,
        answer: ToolAnswer,
    ) -> Result<Delivery, UnknownRequest> {
        self.tool_calls.answer(request_id, answer)
    }

    /// Takes the client's decision on a permission request (a `PermissionResult` object).
    pub(crate) fn answer_permission(
        &self,
        request_id: &str,
        result: Value,
    ) -> Result<Delivery, UnknownRequest> {
        self.permissions.answer(request_id, result)
    }

    /// Opens the slot of an elicitation about to be announced; its answer arrives here.
    pub(crate) fn expect_elicitation(&self, request_id: &str) -> Option<oneshot::Receiver<Value>> {
        self.elicitations.receiver(request_id)
    }

    /// Takes a client's answer to an elicitation (the schema's `UIElicitationResponse`).
    pub(crate) fn answer_elicitation(
        &self,
        request_id: &str,
        response: Value,
    ) -> Result<Delivery, UnknownRequest> {
        self.elicitations.answer(request_id, response)
    }

    /// Marks an elicitation over (answered or given up).
    pub(crate) fn forget_elicitation(&self, request_id: &str) {
        self.elicitations.forget(request_id);
    }

    /// Ends the hook calls waiting for the client now (the loop records them as failed and
    /// goes on); a hook that never answers must not keep an abort or a close waiting.
    pub(crate) fn interrupt_hooks(&self) {
        let mut current = self
            .hooks_in_flight
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        current.cancel();
        *current = CancellationToken::new();
    }

    /// The permission requests still waiting for a decision: `(requestId, promptRequest)`.
    pub(crate) fn pending_prompts(&self) -> Vec<(String, Value)> {
        self.lock_prompts().clone()
    }

    fn lock_prompts(&self) -> std::sync::MutexGuard<'_, Vec<(String, Value)>> {
        self.prompts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Opens the slots of the requests a resume continues (`ResumeReport::continued_requests`)
    /// before the client can answer: an answer sent as soon as the resume is answered, before
    /// the engine announces the requests again, is kept for them.
    pub(crate) fn expect_continued(&self, requests: &turnstile_loop::ContinuedRequests) {
        for id in &requests.tool_calls {
            self.tool_calls.expect(id);
        }
        if self.capabilities.permissions {
            for id in &requests.permissions {
                self.permissions.expect(id);
            }
        }
    }

    /// Whether the engine waits on this client: a client tool's result or a permission
    /// decision not answered yet.
    pub(crate) fn awaits_client(&self) -> bool {
        self.tool_calls.waiting() || self.permissions.waiting()
    }

    /// Fails whatever still waits for this client.
    pub(crate) fn close(&self) {
        self.tool_calls.clear();
        self.permissions.clear();
        self.elicitations.clear();
        self.lock_prompts().clear();
    }
}

impl ExternalTools for ClientBridge {
    fn specs(&self) -> Vec<ToolSpec> {
        self.tools.all()
    }

    fn call(&self, call: ExternalToolCall) -> BoxFuture<'static, Result<ToolOutput, ToolFailure>> {
        // Registered now, synchronously: an answer arriving from here on finds the slot.
        let rx = self.tool_calls.receiver(&call.request_id);
        let closed = self.no_client_left();
        let session_id = self.session_id.clone();
        Box::pin(async move {
            let gone = || {
                ToolFailure::new(
                    format!("{INTERRUPTED_MESSAGE} (the SDK client disconnected)"),
                    "interrupted",
                )
            };
            if closed {
                return Err(gone());
            }
            match rx {
                Some(rx) => match rx.await {
                    Ok(ToolAnswer::Result(result)) => result,
                    Ok(ToolAnswer::Threw(message)) => {
                        tracing::warn!(session = %session_id, request = %call.request_id, %message, "the client's tool handler failed");
                        Err(ToolFailure::new(
                            threw_text(&call.tool_name, &call.arguments),
                            "failure",
                        ))
                    }
                    Err(_) => Err(gone()),
                },
                None => Err(ToolFailure::new(
                    format!("tool call {} is already being handled", call.request_id),
                    "duplicate_request",
                )),
            }
        })
    }
}

impl PermissionAsker for ClientBridge {
    fn ask(
        &self,
        request_id: String,
        _request: Value,
    ) -> BoxFuture<'static, Result<Value, AskError>> {
        let rx = self.permissions.receiver(&request_id);
        let closed = self.no_client_left();
        Box::pin(async move {
            if closed {
                return Err(AskError::Disconnected);
            }
            match rx {
                Some(rx) => rx.await.map_err(|_| AskError::Disconnected),
                None => Err(AskError::AlreadyAsked(request_id)),
            }
        })
    }
}

impl HookRunner for ClientBridge {
    fn handles(&self, hook_type: &str) -> bool {
        self.capabilities.hooks && HOOK_TYPES.contains(&hook_type)
    }

    fn invoke<'a>(
        &'a self,
        hook_type: &'a str,
        input: Value,
    ) -> BoxFuture<'a, Result<Option<Value>, HookRunError>> {
        let interrupted = self
            .hooks_in_flight
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        Box::pin(async move {
            let params = json!({
                "sessionId": self.session_id,
                "hookType": hook_type,
                "input": sdk_hook_input(hook_type, input),
            });
            let result = tokio::select! {
                result = self.peer.call("hooks.invoke", params) => {
                    result.map_err(|e| HookRunError::Client(Box::new(e)))?
                }
                _ = interrupted.cancelled() => return Err(HookRunError::Interrupted),
            };
            // `{ output }`; a handler that returned nothing leaves `output` out.
            Ok(result.get("output").filter(|o| !o.is_null()).cloned())
        })
    }
}

/// The loop's hook input in the shape the SDK's hook handlers are typed for: `toolArgs` as the
/// arguments object (command hooks get it as JSON text), `errorOccurred` with `error` as text.
fn sdk_hook_input(hook_type: &str, mut input: Value) -> Value {
    let Some(obj) = input.as_object_mut() else {
        return input;
    };
    if let Some(Value::String(text)) = obj.get("toolArgs")
        && let Ok(args) = serde_json::from_str::<Value>(text)
    {
        obj.insert("toolArgs".into(), args);
    }
    if hook_type == "errorOccurred"
        && let Some(error) = obj.get("error").filter(|e| e.is_object())
    {
        let message = error["message"]
            .as_str()
            .unwrap_or("unknown error")
            .to_owned();
        obj.insert("error".into(), Value::String(message));
        // The loop calls this hook only for a failed model call, which ends the message.
        obj.entry("errorContext").or_insert(json!("model_call"));
        obj.entry("recoverable").or_insert(json!(false));
    }
    input
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_answer_before_the_ask_is_kept() {
        let pending: Pending<u32> = Pending::new();
        pending.expect("r1");
        assert_eq!(pending.answer("r1", 7), Ok(Delivery::Taken));
        let rx = pending.receiver("r1").unwrap();
        assert_eq!(rx.await.unwrap(), 7);
        assert_eq!(pending.answer("r1", 8), Ok(Delivery::Moot));
        assert_eq!(
            pending.answer("nope", 1),
            Err(UnknownRequest("nope".into()))
        );
    }

    #[tokio::test]
    async fn an_ask_before_the_event_is_answered() {
        let pending: Pending<u32> = Pending::new();
        let rx = pending.receiver("r2").unwrap();
        pending.expect("r2");
        assert_eq!(pending.answer("r2", 3), Ok(Delivery::Taken));
        assert_eq!(rx.await.unwrap(), 3);
        assert_eq!(pending.answer("r2", 1), Ok(Delivery::Moot));
        pending.forget("r2");
        pending.expect("r2");
        assert_eq!(
            pending.answer("r2", 1),
            Ok(Delivery::Moot),
            "a finished id stays over"
        );
    }

    #[tokio::test]
    async fn an_answer_after_the_wait_ended_is_moot() {
        let pending: Pending<u32> = Pending::new();
        drop(pending.receiver("r4"));
        assert_eq!(pending.answer("r4", 1), Ok(Delivery::Moot));
    }

    #[tokio::test]
    async fn clearing_fails_waiters() {
        let pending: Pending<u32> = Pending::new();
        let rx = pending.receiver("r3").unwrap();
        pending.clear();
        assert!(rx.await.is_err());
    }

    #[test]
    fn hook_input_is_mapped_for_the_sdk() {
        let pre = sdk_hook_input(
            "preToolUse",
            json!({"toolName": "bash", "toolArgs": "{\"command\":\"ls\"}", "timestamp": 1}),
        );
        assert_eq!(pre["toolArgs"]["command"], "ls");
        let err = sdk_hook_input(
            "errorOccurred",
            json!({"error": {"name": "http", "message": "boom"}}),
        );
        assert_eq!(err["error"], "boom");
        assert_eq!(err["errorContext"], "model_call");
        assert_eq!(err["recoverable"], false);
        let odd = sdk_hook_input("preToolUse", json!({"toolArgs": "not json"}));
        assert_eq!(odd["toolArgs"], "not json");
    }
}
