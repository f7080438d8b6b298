//! Permissions a call finds it needs while it runs (a `web_fetch` redirect to a new URL): the
//! tool sends the request to the loop, which decides it as it decides a call's own request
//! (rules, then the client) and records it, and waits for the answer.

use tokio::sync::{mpsc, oneshot};

use super::{PermissionAsk, ToolContext, ToolFailure};

/// The runtime's words for a request nobody can answer (no rule approves, no client asks).
pub const NOBODY_TO_ASK: &str = "Permission denied and could not request permission from user";

/// One request of a running call, with where its answer goes (`Err`: the denial the model
/// reads).
#[derive(Debug)]
pub struct FurtherAsk {
    /// What the call asks for, as a call's own request would.
    pub ask: PermissionAsk,
    /// The decision.
    pub reply: oneshot::Sender<Result<(), ToolFailure>>,
}

/// Where a running call sends its requests.
pub type AskSender = mpsc::UnboundedSender<FurtherAsk>;

impl ToolContext {
    /// Asks for a permission while the call runs; `Ok` is an approval. A context outside a
    /// session (no loop to ask) can ask nobody: `approved_here` alone decides, as a rule of
    /// the context's own would.
    pub async fn permit(&self, ask: PermissionAsk, approved_here: bool) -> Result<(), ToolFailure> {
        let denied = || ToolFailure::new(NOBODY_TO_ASK, "denied");
        let Some(asks) = &self.asks else {
            return if approved_here { Ok(()) } else { Err(denied()) };
        };
        let (reply, answer) = oneshot::channel();
        asks.send(FurtherAsk { ask, reply }).map_err(|_| denied())?;
        tokio::select! {
            _ = self.cancel.cancelled() => Err(ToolFailure::cancelled()),
            answer = answer => answer.unwrap_or_else(|_| Err(denied())),
        }
    }
}
