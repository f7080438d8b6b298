//! What a resume is asked (pending work continued or closed) and what it reports.

use turnstile_tools::processes::StoppedGroup;

/// How a resume treats work the previous engine left in flight.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ResumeOptions {
    /// The open turn's calls that wait on a permission answer or a client tool result stay
    /// open: their requests are announced again (same `requestId`, same data) and the loop goes
    /// on once they are answered (`session.resume` records `continuePendingWork: true`).
    /// `false`: they are closed as interrupted.
    pub continue_pending_work: bool,
    /// The client named `continuePendingWork`: `session.resume` records the choice (`false`
    /// included), as the Copilot CLI does; unnamed, only a continued resume records it.
    pub continue_pending_work_named: bool,
    /// The continued work waits for [`SessionHandle::release_pending_work`](super::SessionHandle::release_pending_work) (or an abort)
    /// before its requests are announced again: a server registers the session first, so a
    /// client that answers at once finds it open.
    pub hold_pending_work: bool,
}

/// What resuming did.
#[derive(Debug, Clone)]
pub struct ResumeReport {
    /// The journal's state before the resume plan.
    pub events_before: u64,
    /// Work was open when the journal ended.
    pub was_active: bool,
    /// Tool calls the plan marked interrupted.
    pub closed_tool_calls: Vec<String>,
    /// Turns the plan closed.
    pub closed_turns: Vec<String>,
    /// The checkpoint was used.
    pub used_checkpoint: bool,
    /// A torn tail was cut on open.
    pub torn_tail_cut: bool,
    /// Tool calls left open to be continued (`ResumeOptions::continue_pending_work`).
    pub continued_tool_calls: Vec<String>,
    /// The `requestId`s the continued calls wait on: client tool calls, then permission
    /// requests, so a server can take an answer that comes before they are announced again.
    pub continued_requests: ContinuedRequests,
    /// Tool process groups the previous engine left running, killed by this resume.
    pub stopped_process_groups: Vec<StoppedGroup>,
    /// The model the session goes on with: the one its journal names last (its `session.resume`
    /// records it), whatever model the parts were built with.
    pub model: String,
}

/// The requests continued work waits on, by `requestId`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ContinuedRequests {
    /// Client tool calls (`external_tool.requested`).
    pub tool_calls: Vec<String>,
    /// Permission requests (`permission.requested`).
    pub permissions: Vec<String>,
}
