//! `abort`: the current turn was cut short.

use serde::{Deserialize, Serialize};

use super::payload;

/// `abort`: why the running turn was stopped.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Abort {
    /// `user_initiated`, `remote_command`, `user_abort` or `autopilot_credit_limit`.
    pub reason: String,
}
payload!(Abort, "abort");
