//! One send: its options, and how the message it started ended.

use crate::autopilot::AgentMode;
use crate::prompt::Attachment;
use turnstile_providers::ModelErrorKind;

/// Options of one send.
#[derive(Debug, Clone, Default)]
pub struct SendOptions {
    /// Mode for this message; `None` uses the session's.
    pub mode: Option<AgentMode>,
    /// Files, directories, selections, blobs and GitHub references attached to the message.
    pub attachments: Vec<Attachment>,
    /// Extra HTTP headers of every model call this message makes (`requestHeaders`).
    pub request_headers: Vec<(String, String)>,
}

/// How a message ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The loop finished; `session.idle` was announced.
    Idle,
    /// The message was aborted; `session.idle {aborted: true}` was announced.
    Aborted,
    /// The model call (or the journal) failed; `session.error` was recorded.
    Failed {
        /// What failed: `errorType` of the `session.error`, or `journal` when the session's
        /// own journal did (nothing could be recorded then).
        error_type: ModelErrorKind,
        /// HTTP status, when there was one.
        status_code: Option<u16>,
        /// What went wrong.
        message: String,
    },
}
