//! `system.message`: the instructions the model received.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::payload;

/// `system.message`: a system or developer prompt sent as model input.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SystemMessage {
    /// `system` or `developer`.
    pub role: String,
    /// The prompt text.
    pub content: String,
    /// Name of the message's source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Interaction of the model run that receives the prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interaction_id: Option<String>,
    /// How the prompt was built from its template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<SystemMessageMetadata>,
}
payload!(SystemMessage, "system.message");

/// Template facts of a [`SystemMessage`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SystemMessageMetadata {
    /// Version of the prompt template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_version: Option<String>,
    /// Template variables (any JSON each).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variables: Option<Map<String, Value>>,
}

/// What `metadata.promptVersion` of turnstile's main-agent `system.message` starts with: the
/// field that names the writer where `session.start` names the Copilot CLI.
pub const TURNSTILE_PROMPT_VERSION_PREFIX: &str = "turnstile/";

impl SystemMessageMetadata {
    /// turnstile's own mark: `promptVersion` `turnstile/<version>` (the prompt template is
    /// turnstile's), no variables.
    pub fn turnstile() -> Self {
        SystemMessageMetadata {
            prompt_version: Some(format!(
                "{TURNSTILE_PROMPT_VERSION_PREFIX}{}",
                env!("CARGO_PKG_VERSION")
            )),
            ..Default::default()
        }
    }

    /// turnstile's version when this is turnstile's mark.
    pub fn turnstile_version(&self) -> Option<&str> {
        self.prompt_version
            .as_deref()?
            .strip_prefix(TURNSTILE_PROMPT_VERSION_PREFIX)
    }
}

/// `system.notification` (persisted): the runtime tells the model of something that happened
/// on its own, e.g. a background shell that ended; the model reads `content` as a user message.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SystemNotification {
    /// The text the model reads (`<system_notification>…</system_notification>`).
    pub content: String,
    /// What caused it, e.g. `{type: "shell_completed", shellId, exitCode, description}` (a
    /// tagged union; kept raw).
    pub kind: Value,
}
payload!(SystemNotification, "system.notification");
