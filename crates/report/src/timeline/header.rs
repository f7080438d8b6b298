//! What the page's header shows about the session: [`SessionFacts`], which the session's start,
//! resume and shutdown fill in (`facts.rs`) and the usage events add to.

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
