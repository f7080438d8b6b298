//! The words a resume writes for work a crash cut short. Its own file because the resume plan
//! (`resume_plan.rs`) writes them, and the conversation (`conversation.rs`) shows the model the
//! same message for a tool call left without a result.

/// The runtime's wording for a tool call cut short.
pub const INTERRUPTED_MESSAGE: &str =
    "The execution of this tool, or a previous tool was interrupted.";
/// `error.code` of a tool call cut short by the end of the process.
pub const INTERRUPTED_CODE: &str = "interrupted";
/// `result.reason` of a permission request left unanswered.
pub const CANCELLED_REASON: &str = "The session stopped before this request was answered.";
