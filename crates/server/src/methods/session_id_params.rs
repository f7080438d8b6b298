//! The params of every method that names a session and nothing else (`{sessionId}`), shared by
//! most method files; a file of its own so that none of them has to import another method
//! file (say `lifecycle`) for it.

use serde::Deserialize;

/// `sessionId` alone.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SessionIdParams {
    session_id: String,
}

impl SessionIdParams {
    /// The session id as sent.
    pub(crate) fn id(&self) -> &str {
        &self.session_id
    }
}
