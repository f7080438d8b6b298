//! What the page's header shows about the session: [`SessionFacts`], which the session's start,
//! resume and shutdown fill in (`facts.rs`) and the usage events add to.

use std::collections::BTreeMap;

use serde::Deserialize;

/// The facts about the session the header shows.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SessionFacts {
    /// `session.start` `sessionId`.
    pub session_id: Option<String>,
    /// Who wrote the journal (`producer`).
    pub producer: Option<String>,
    /// The model at start (then the last `session.model_change`).
    pub model: Option<String>,
    /// The working directory at start.
    pub cwd: Option<String>,
    /// `session.start` `startTime`.
    pub start_time: Option<String>,
    /// Timestamp of the last event read.
    pub last_time: Option<String>,
    /// Output and input tokens per model from the last `session.shutdown`.
    pub shutdown_tokens: Vec<ModelTokens>,
    /// The models in the order the session used them: the start's, then each switch (at most
    /// [`super::MAX_MODELS`]; a switch back counts again).
    pub models: Vec<String>,
    /// Sub-agents' names by agent id (at most [`super::MAX_AGENT_NAMES`]).
    pub agents: BTreeMap<String, AgentName>,
}

/// What a sub-agent is called: the `name` its `task` call gave it and the kind of agent
/// `subagent.started` names. Either may be missing (a journal may hold one and not the other).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AgentName {
    /// The `task` call's `name` argument (or its `description` when it has no name).
    pub name: Option<String>,
    /// `subagent.started` `agentDisplayName` (or `agentName`), e.g. "Explore Agent".
    pub kind: Option<String>,
}

impl AgentName {
    /// "name (kind)", or whichever of the two is known.
    pub fn label(&self) -> Option<String> {
        match (&self.name, &self.kind) {
            (Some(n), Some(k)) => Some(format!("{n} ({k})")),
            (Some(n), None) => Some(n.clone()),
            (None, Some(k)) => Some(k.clone()),
            (None, None) => None,
        }
    }
}

/// One model's totals from `session.shutdown` `modelMetrics`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelTokens {
    /// The model id (filled from the map key).
    #[serde(skip)]
    pub model: String,
    /// Calls made.
    #[serde(default)]
    pub requests: Requests,
    /// Token totals.
    #[serde(default)]
    pub usage: Usage,
}

/// `modelMetrics.<model>.requests`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct Requests {
    /// Calls made.
    #[serde(default)]
    pub count: u64,
}

/// `modelMetrics.<model>.usage`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// Prompt tokens.
    #[serde(default)]
    pub input_tokens: u64,
    /// Completion tokens.
    #[serde(default)]
    pub output_tokens: u64,
}
