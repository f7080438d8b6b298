//! The session directory as the Copilot CLI lays it out beside the journal: `workspace.yaml`
//! (written when the session is created, again when its first prompt names it, and brought up
//! to date on a resume) and the `checkpoints/`, `files/`, `research/` folders.
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

/// The repository facts of a recorded context.
fn git_of(context: &WorkingDirectoryContext) -> GitContext {
    GitContext {
        git_root: context.git_root.clone().map(Into::into),
        repository: context.repository.clone(),
        host_type: context.host_type.clone(),
        repository_host: context.repository_host.clone(),
        branch: context.branch.clone(),
        head_commit: context.head_commit.clone(),
    }
}

/// Writes the folders and `workspace.yaml` of a session from its folded state; `name` is the
/// session's first prompt, when it has one.
pub(super) fn write(dir: &Path, state: &SessionState, client_name: &str, name: Option<&str>) {
    let context = state.session.context.clone().unwrap_or_default();
    let now = Timestamp::now().to_text();
    let file = Workspace {
        id: state.session.session_id.clone().unwrap_or_default(),
        git: git_of(&context),
        cwd: context.cwd,
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

/// When the session moved to another working directory: `workspace.yaml`'s location lines
/// (working directory, repository, branch) and `updated_at` follow it, as in the Copilot CLI.
pub(super) fn moved(dir: &Path, context: &WorkingDirectoryContext) {
    let now = Timestamp::now().to_text();
    if let Err(e) = workspace::refresh(dir, &context.cwd, &git_of(context), &now) {
        tracing::warn!(dir = %dir.display(), error = %e, "cannot bring the session's workspace.yaml up to date");
    }
}

/// On a resume: the folders, and `workspace.yaml` brought up to date as the Copilot CLI does
/// (the working directory, repository and branch of the resume, `updated_at`); a file either
/// runtime wrote keeps everything else (a name a user gave, its summaries). A whole one is
/// written when there is none.
pub(super) fn write_on_resume(dir: &Path, state: &SessionState, client_name: &str) {
    let context = state.session.context.clone().unwrap_or_default();
    let git = git_of(&context);
    let now = Timestamp::now().to_text();
    match workspace::refresh(dir, &context.cwd, &git, &now) {
        Ok(workspace::Refreshed::Missing) => return write(dir, state, client_name, None),
        Ok(_) => {}
        Err(e) => {
            tracing::warn!(dir = %dir.display(), error = %e, "cannot bring the session's workspace.yaml up to date");
        }
    }
    if let Err(e) = workspace::create_session_folders(dir) {
        tracing::warn!(dir = %dir.display(), error = %e, "cannot create the session's folders");
    }
}
