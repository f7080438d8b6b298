//! The integration tests of this crate, one binary: each file of `tests/` is a module here,
//! so the crate links one test binary instead of one per file (see docs/performance.md).
//! A test that re-runs this binary as a child names itself by its module path
//! (`file::test_name`).

mod common;
#[path = "../../mcp/tests/support/server.rs"]
mod server;

mod closed_pipe;
mod compaction;
mod copilot_habits;
mod diff_command;
mod export_otlp;
mod hook_trust;
mod inuse_marker;
mod journal_commands;
mod long_sessions;
mod model_server_checks;
mod otel_live;
mod plain_messages;
mod policy_flags;
mod providers;
mod readme_offline;
mod replay_check;
mod report_browser;
mod report_command;
mod report_overview;
mod resume_picker;
mod resume_reached;
mod rewind;
mod rewind_prop;
mod run_mcp;
mod run_model_limits;
mod run_resume;
mod run_skills;
mod run_sql_web_fetch;
mod run_subagents;
mod sandbox_effects;
mod serve_client_token;
mod serve_flags;
mod serve_mcp;
mod serve_model_endpoint;
mod serve_token;
mod session_dir_layout;
mod session_files;
mod sessions_listing;
mod store_bounds;
mod store_commands;
mod store_durability;
mod store_nats;
mod store_vs_files;
mod terminal_approval;
mod tool_env;
mod type_warning;
mod verify_seal;
mod verify_seal_nats;
