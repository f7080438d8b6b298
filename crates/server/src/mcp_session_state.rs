//! What a session keeps for the `session.mcp.*` methods beyond its servers: whether a client
//! gave it the `mcp-apps` capability, the host context offered to MCP App views, and the sampling executions
//! in flight (each cancellable by its request id), with the session's model provider they run
//! on. Everything is bounded: a context over [`MAX_HOST_CONTEXT_BYTES`] is refused, at most
//! [`MAX_SAMPLINGS`] executions run at once.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;
use turnstile_providers::ModelProvider;

/// The largest host context (its JSON) a client may set.
pub const MAX_HOST_CONTEXT_BYTES: usize = 64 * 1024;

/// The most sampling executions a session runs at once.
pub const MAX_SAMPLINGS: usize = 16;

/// How a session's MCP env values are resolved (the schema's `McpSetEnvValueModeDetails`);
/// the Copilot CLI 1.0.81-0 launches servers alike in both (`turnstile_mcp`'s env expansion),
/// so the mode is answered, not kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EnvValueMode {
    /// Literal values.
    Direct,
    /// Values as references to the engine's variables.
    Indirect,
}

/// Why a sampling execution could not be registered.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SamplingRefused {
    /// The request id is already running.
    #[error("a sampling execution with requestId {0:?} is already running")]
    Duplicate(String),
    /// [`MAX_SAMPLINGS`] are running.
    #[error("{MAX_SAMPLINGS} sampling executions are already running in this session")]
    Full,
}

/// One session's MCP extras.
#[derive(Default)]
pub(crate) struct McpSessionState {
    apps: AtomicBool,
    host_context: Mutex<Map<String, Value>>,
    samplings: Mutex<HashMap<String, CancellationToken>>,
    provider: OnceLock<Arc<dyn ModelProvider>>,
}

impl McpSessionState {
    /// Whether the session has the `mcp-apps` capability (`session.options.update`'s
    /// `sessionCapabilities`).
    pub(crate) fn has_apps(&self) -> bool {
        self.apps.load(Ordering::SeqCst)
    }

    /// Gives or takes the `mcp-apps` capability.
    pub(crate) fn set_apps(&self, on: bool) {
        self.apps.store(on, Ordering::SeqCst);
    }

    /// The host context offered to MCP App views (`{}` until a client sets one).
    pub(crate) fn host_context(&self) -> Map<String, Value> {
        self.host_context
            .lock()
            .map(|c| c.clone())
            .unwrap_or_default()
    }

    /// Replaces the host context; `Err` with its size when it is over the cap.
    pub(crate) fn set_host_context(&self, context: Map<String, Value>) -> Result<(), usize> {
        let size = serde_json::to_string(&context).map_or(usize::MAX, |t| t.len());
        if size > MAX_HOST_CONTEXT_BYTES {
            return Err(size);
        }
        if let Ok(mut c) = self.host_context.lock() {
            *c = context;
        }
        Ok(())
    }

    /// The provider the session's model calls go to, set once when the session opens.
    pub(crate) fn set_provider(&self, provider: Arc<dyn ModelProvider>) {
        let _ = self.provider.set(provider);
    }

    /// The session's provider, when it was set.
    pub(crate) fn provider(&self) -> Option<Arc<dyn ModelProvider>> {
        self.provider.get().cloned()
    }

    /// Registers a sampling execution under `request_id`; its token is cancelled by
    /// [`Self::cancel_sampling`].
    pub(crate) fn start_sampling(
        &self,
        request_id: &str,
    ) -> Result<CancellationToken, SamplingRefused> {
        let mut running = self.samplings.lock().map_err(|_| SamplingRefused::Full)?;
        if running.contains_key(request_id) {
            return Err(SamplingRefused::Duplicate(request_id.to_owned()));
        }
        if running.len() >= MAX_SAMPLINGS {
            return Err(SamplingRefused::Full);
        }
        let token = CancellationToken::new();
        running.insert(request_id.to_owned(), token.clone());
        Ok(token)
    }

    /// Forgets a finished execution.
    pub(crate) fn end_sampling(&self, request_id: &str) {
        if let Ok(mut running) = self.samplings.lock() {
            running.remove(request_id);
        }
    }

    /// Cancels the execution `request_id`; `false` when none runs under that id.
    pub(crate) fn cancel_sampling(&self, request_id: &str) -> bool {
        let token = self
            .samplings
            .lock()
            .ok()
            .and_then(|mut running| running.remove(request_id));
        token.map(|t| t.cancel()).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_sampling_is_cancelled_once_and_ids_do_not_run_twice() {
        let state = McpSessionState::default();
        let token = state.start_sampling("a").expect("registered");
        assert_eq!(
            state.start_sampling("a").err(),
            Some(SamplingRefused::Duplicate("a".into()))
        );
        assert!(!state.cancel_sampling("b"));
        assert!(state.cancel_sampling("a"));
        assert!(token.is_cancelled());
        assert!(!state.cancel_sampling("a"));
    }

    #[test]
    fn samplings_are_capped() {
        let state = McpSessionState::default();
        for i in 0..MAX_SAMPLINGS {
            state.start_sampling(&i.to_string()).expect("under the cap");
        }
        assert_eq!(state.start_sampling("x").err(), Some(SamplingRefused::Full));
        state.end_sampling("0");
        assert!(state.start_sampling("x").is_ok());
    }

    #[test]
    fn the_host_context_is_replaced_and_capped() {
        let state = McpSessionState::default();
        assert!(state.host_context().is_empty());
        let Value::Object(context) = json!({"theme": "dark", "extra": 1}) else {
            unreachable!("an object literal")
        };
        state.set_host_context(context.clone()).expect("small");
        assert_eq!(state.host_context(), context);
        let Value::Object(big) = json!({"x": "y".repeat(MAX_HOST_CONTEXT_BYTES)}) else {
            unreachable!("an object literal")
        };
        assert!(state.set_host_context(big).is_err());
        assert_eq!(state.host_context(), context);
    }

    #[test]
    fn env_value_modes_read_as_the_schema_spells_them() {
        let mode: EnvValueMode = serde_json::from_value(json!("indirect")).expect("known");
        assert_eq!(mode, EnvValueMode::Indirect);
        assert!(serde_json::from_value::<EnvValueMode>(json!("bogus")).is_err());
    }
}
