//! The bounds on what runs at once: the built-in tool calls of one turn
//! ([`SessionConfig::max_parallel_tools`](super::SessionConfig::max_parallel_tools)) and the
//! sub-agents of a session, each calling the model and running tools
//! ([`SessionConfig::max_parallel_agents`](super::SessionConfig::max_parallel_agents)).
//! Beyond a bound work waits its turn in the order it asked (the semaphore is fair), and an
//! abort ends the wait. Nothing of it is recorded: the journal shows the calls started in
//! request order and completed as they finish, as the runtime's does.

use tokio::sync::{Semaphore, SemaphorePermit};
use tokio_util::sync::CancellationToken;

/// Default most built-in tool calls of one turn running at once.
pub const DEFAULT_PARALLEL_TOOLS: usize = 8;

/// Default most sub-agents of a session working at once.
pub const DEFAULT_PARALLEL_AGENTS: usize = 4;

/// A bound of `n` (at least 1: a bound of 0 would run nothing).
pub(super) fn slots(n: usize) -> Semaphore {
    Semaphore::new(n.clamp(1, Semaphore::MAX_PERMITS))
}

/// A place under the bound `slots`, or `None` when `cancel` fires first.
pub(super) async fn take<'s>(
    slots: &'s Semaphore,
    cancel: &CancellationToken,
) -> Option<SemaphorePermit<'s>> {
    tokio::select! {
        biased;
        () = cancel.cancelled() => None,
        // The semaphore is never closed, so `acquire` cannot fail.
        permit = slots.acquire() => permit.ok(),
    }
}
