//! Moving an idle session to another working directory (SDK
//! `session.metadata.setWorkingDirectory`).
//!
//! Everything that reads the working directory reads `parts.config.cwd` when it starts (a tool
//! call, a prompt's attachments, the permission rules' paths), so changing it between messages
//! moves them all; the kernel sandbox is the exception, built once with the directory among its
//! writable roots, so it is built again here. Processes already running (a background shell, an
//! MCP server) keep the directory and the sandbox they started with.
//!
//! As in the Copilot CLI the change is two `session.context_changed` events: the new directory
//! with `pendingGitContext: true`, then the directory with its repository facts resolved. The
//! fold takes the last as the session's context, so a replay and a resume see where it works.

use std::path::PathBuf;

use turnstile_journal::payload::{SessionContextChanged, WorkingDirectoryContext};

use super::actor::{Actor, can_ask};
use super::error::LoopError;

impl Actor {
    /// Moves the session to `cwd` (checked by the caller: absolute, an existing directory).
    pub(super) fn set_working_directory(&mut self, cwd: PathBuf) -> Result<(), LoopError> {
        let pending = WorkingDirectoryContext {
            cwd: cwd.display().to_string(),
            pending_git_context: Some(true),
            ..Default::default()
        };
        self.record_context(&pending)?;
        let resolved = super::workspace_file::context_of(&cwd);
        self.record_context(&resolved)?;
        self.parts.config.cwd = cwd;
        let dir = self.emitter.writer().paths().dir.clone();
        self.sandbox = super::sandbox::sandboxing(&self.parts.config, &dir, can_ask(&self.parts));
        super::workspace_file::moved(&dir, &resolved);
        Ok(())
    }

    fn record_context(&self, context: &WorkingDirectoryContext) -> Result<(), LoopError> {
        self.emitter.emit(&SessionContextChanged(context.clone()))?;
        Ok(())
    }
}
