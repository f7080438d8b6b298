//! The integration tests of this crate, one binary: each file of `tests/` is a module here,
//! so the crate links one test binary instead of one per file (see docs/performance.md).
//! A test that re-runs this binary as a child names itself by its module path
//! (`file::test_name`).

mod common;
#[path = "../../mcp/tests/support/server.rs"]
mod server;

mod attachments_prop;
mod bounds;
mod hooks_extended;
mod mcp_changes;
mod mcp_tools;
mod model_failures;
mod pending_work;
mod pre_mcp_hook;
mod prompt_and_events;
mod read_permissions;
mod session_approvals;
mod session_loop;
mod shutdown_totals;
mod skills;
mod streaming_events;
mod subagents;
mod tool_processes;
mod tool_result_details;
mod turns;
mod view_image;
