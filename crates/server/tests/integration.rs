//! The integration tests of this crate, one binary: each file of `tests/` is a module here,
//! so the crate links one test binary instead of one per file (see docs/performance.md).
//! A test that re-runs this binary as a child names itself by its module path
//! (`file::test_name`).

mod common;
#[path = "../../mcp/tests/support/server.rs"]
mod server;

mod agents_and_commands;
mod client_inference;
mod connection_limit;
mod connection_token;
mod event_log;
mod extensions;
mod frame_budget;
mod history_compact;
mod interaction;
mod mcp_methods;
mod mcp_no_host;
mod mcp_oauth_apps;
mod mcp_rpc;
mod mcp_servers;
mod model_endpoint;
mod multi_client_tools;
mod options;
mod pending_resume;
mod plan_review;
mod provider_registry;
mod providers;
mod queue;
mod resume_model;
mod rewind_files;
mod robustness;
mod sdk_flow;
mod sdk_methods;
mod sdk_permissions;
mod sdk_sessions;
mod session_account;
mod session_config;
mod session_metadata;
mod session_methods;
mod session_plugins;
mod session_skills;
mod session_state;
mod state_controls;
mod system_transform;
mod takeover;
mod user_account;
mod user_shell;
mod working_directory;
