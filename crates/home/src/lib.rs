//! The Copilot home (`$COPILOT_HOME`, else `~/.copilot`) and its files, read and written in
//! one place so that every crate agrees on where they are, what they say and how they are
//! replaced:
//!
//! - [`locate`]: where the home is;
//! - [`atomic`]: the one way a file is replaced ([`atomic_write`]: a temporary file in the same
//!   directory, fsynced, renamed over the target, the directory fsynced), used for the home's
//!   files and for every other file the engine rewrites whole (the session index, replay
//!   checkpoints, the tool processes' list, report pages);
//! - one module per kind of file: [`settings`] (`settings.json`, `config.json`),
//!   [`mcp_config`] (`mcp-config.json` and `settings.json`'s `disabledMcpServers`),
//!   [`plugins`] (a plugin directory's manifest, `plugin.json`, and its `.mcp.json`),
//!   [`folder_trust`] (`trusted-folders.json`), [`locations`] (`permissions-config.json`),
//!   [`logins`] (the GitHub logins `config.json` records),
//!   [`plan`] (a session's `plan.md`), [`workspace`] (a session's `workspace.yaml` and the
//!   CLI's folders beside the journal); [`git_context`] reads the repository a working
//!   directory is in, as both `workspace.yaml` and `session.start` record it; [`jsonc`] reads
//!   the comments the CLI writes.
//!
//! It depends on no other turnstile crate, so the lowest of them (the journal) can use it.
//!
//! (The unit test `tests::a_written_settings_file_reads_back` runs these lines.)
//!
//! ```ignore
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let home = tempfile::tempdir()?;
//! let path = home.path().join("settings.json");
//! turnstile_home::atomic_write(&path, b"{\"model\": \"gpt-5\"}\n")?;
//! let file = turnstile_home::settings::read(&path)?;
//! assert_eq!(file.settings.model.as_deref(), Some("gpt-5"));
//! # Ok(())
//! # }
//! ```

pub mod atomic;
pub mod folder_trust;
pub mod git_context;
mod json_type;
pub mod jsonc;
pub mod locate;
pub mod locations;
pub mod logins;
pub mod mcp_config;
pub mod plan;
pub mod plugins;
pub mod settings;
pub mod workspace;

pub use atomic::{AtomicWrite, AtomicWriteError, atomic_write};
pub use json_type::json_type_name;
pub use locate::copilot_home;

#[cfg(test)]
mod tests {
    #[test]
    fn a_written_settings_file_reads_back() {
        let home = tempfile::tempdir().unwrap();
        let path = home.path().join("settings.json");
        crate::atomic_write(&path, b"{\"model\": \"gpt-5\"}\n").unwrap();
        let file = crate::settings::read(&path).unwrap();
        assert_eq!(file.settings.model.as_deref(), Some("gpt-5"));
    }
}
