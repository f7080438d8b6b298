//! The checkpoint sidecar's format version. Its own file because the checkpoint
//! (`checkpoint.rs`) writes and checks it, and a rejection (`checkpoint_rejection.rs`) names it.

/// Format version; a checkpoint of another version is ignored. 2: the state keeps user
/// message attachments and binary assets. 3: each message's view position and the view's
/// length, which rewind markers need. 4: what truncations hid until the next message. 5: the
/// sub-agents' LLM calls recorded without turns, and the calls and agent figures the last
/// shutdown counted. 6: the pictures tool results gave the model (`binaryResultsForLlm`).
/// 7: the session limits in force (`sessionLimits`).
pub const CHECKPOINT_VERSION: u32 = 7;
