//! The session directory as the Copilot CLI lays it out beside the journal: `workspace.yaml`
//! (written when the session is created, again when its first prompt names it, and on a
//! resume that finds none) and the `checkpoints/`, `files/`, `research/` folders.
//!
//! These files are for the tools that read `session-state/`; the session depends on none of
//! them, so a failure to write one is logged and the session goes on.

use std::path::Path;

use turnstile_home::git_context::GitContext;
use turnstile_home::workspace::{self, Workspace};
use turnstile_journal::Timestamp;
use turnstile_journal::payload::WorkingDirectoryContext;
use turnstile_replay::SessionState;

/// The git facts of a working directory as `session.start` records them.
pub(super) fn context_of(cwd: &Path) -> WorkingDirectoryContext {
    let git = GitContext::of(cwd);
    WorkingDirectoryContext {
        cwd: cwd.display().to_string(),
        git_root: git.git_root.map(|p| p.display().to_string()),
        repository: git.repository,
        host_type: git.host_type,
        repository_host: git.repository_host,
        branch: git.branch,
        head_commit: git.head_commit,
        ..Default::default()
    }
}

/// Writes the folders and `workspace.yaml` of a session from its folded state; `name` is the
/// session's first prompt, when it has one.
pub(super) fn write(dir: &Path, state: &SessionState, client_name: &str, name: Option<&str>) {
    let context = state.session.context.clone().unwrap_or_default();
    let now = Timestamp::now().to_text();
    let file = Workspace {
        id: state.session.session_id.clone().unwrap_or_default(),
        cwd: context.cwd,
        git: GitContext {
            git_root: context.git_root.map(Into::into),
            repository: context.repository,
            host_type: context.host_type,
            repository_host: context.repository_host,
            branch: context.branch,
            head_commit: context.head_commit,
        },
        client_name: client_name.to_string(),
        name: name.map(workspace::session_name),
        user_named: false,
        summary_count: 0,
        created_at: state
            .session
            .start_time
            .clone()
            .unwrap_or_else(|| now.clone()),
        updated_at: now,
    };
    if let Err(e) = workspace::create_session_folders(dir).and_then(|()| file.write(dir)) {
        tracing::warn!(dir = %dir.display(), error = %e, "cannot write the session's workspace.yaml or folders; tools that read them will not list this session's details");
    }
}

/// On a resume: the folders, and `workspace.yaml` when there is none (one written by either
/// runtime is kept as it is: a name a user gave, its summaries).
pub(super) fn write_if_missing(dir: &Path, state: &SessionState, client_name: &str) {
    if std::fs::symlink_metadata(dir.join(workspace::WORKSPACE_FILE)).is_ok() {
        if let Err(e) = workspace::create_session_folders(dir) {
            tracing::warn!(dir = %dir.display(), error = %e, "cannot create the session's folders");
        }
        return;
    }
    write(dir, state, client_name, None);
}
