//! `session.workspaces.diff`: the working directory's changes as git sees them, as the
//! Copilot CLI answers a client's diff view. Nothing is changed, so nothing is recorded.
//!
//! - `unstaged`: every change against `HEAD`, staged or not, and the untracked files (not
//!   ignored), one entry a file sorted by path, each with its unified diff (git's, its last
//!   newline trimmed; an untracked file's written as the runtime writes it).
//! - `branch`: the changes since the default branch (`origin/HEAD`'s, else `main`, else
//!   `master`) forked off; when there is no such branch, the `unstaged` answer with
//!   `isFallback: true` and the branch named, as the runtime answers.
//! - `session`: the runtime's diff of the files it changed this session; this engine tracks no
//!   file changes, so it is the `unstaged` answer with `isFallback: true` and
//!   `unavailableReason: "file-change-tracking-disabled"`, as the runtime answers a session
//!   without tracking.
//!
//! A directory git does not know answers no changes. git runs with the session's working
//! directory, no pager, no external diff and no optional locks, for at most [`GIT_TIMEOUT`]
//! a command (then killed); at most [`MAX_DIFF_FILES`] files are answered and a file's diff
//! over [`MAX_FILE_DIFF_BYTES`] is left out with `isTruncated: true`.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};

use super::{Ctx, open_session};
use crate::rpc::{RpcError, codes};

/// How long one git command may run.
pub(crate) const GIT_TIMEOUT: Duration = Duration::from_secs(10);

/// The most changed files one diff answers (the first ones by path).
pub(crate) const MAX_DIFF_FILES: usize = 1000;

/// The largest diff answered for one file.
pub(crate) const MAX_FILE_DIFF_BYTES: usize = 512 * 1024;

/// The most bytes read of one git command's output.
const MAX_GIT_OUTPUT: usize = 16 * 1024 * 1024;

/// `session.workspaces.diff` params.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct DiffParams {
    session_id: String,
    mode: Mode,
    #[serde(default)]
    ignore_whitespace: bool,
}

/// The schema's `WorkspaceDiffMode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Mode {
    Unstaged,
    Branch,
    Session,
}

impl Mode {
    fn as_str(self) -> &'static str {
        match self {
            Mode::Unstaged => "unstaged",
            Mode::Branch => "branch",
            Mode::Session => "session",
        }
    }
}

/// One changed file.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Change {
    path: String,
    kind: &'static str,
    /// Not in the index: its diff is written here, not git's.
    untracked: bool,
    diff: Option<String>,
}

impl Change {
    fn to_json(&self) -> Value {
        match &self.diff {
            Some(diff) => json!({"path": self.path, "diff": diff, "changeType": self.kind}),
            None => {
                json!({"path": self.path, "diff": "", "changeType": self.kind, "isTruncated": true})
            }
        }
    }
}

/// A git command's stdout, or `None` when git failed, is missing or ran too long.
async fn git(cwd: &Path, args: &[&str]) -> Option<Vec<u8>> {
    let child = tokio::process::Command::new("git")
        .arg("-C")
        .arg(cwd)
        .args(["-c", "core.quotepath=off", "--no-pager"])
        .args(args)
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .ok()?;
    let output = tokio::time::timeout(GIT_TIMEOUT, child.wait_with_output())
        .await
        .ok()?
        .ok()?;
    if !output.status.success() || output.stdout.len() > MAX_GIT_OUTPUT {
        return None;
    }
    Some(output.stdout)
}

/// The NUL-separated fields of git's `-z` output.
fn fields(bytes: &[u8]) -> Vec<String> {
    bytes
        .split(|b| *b == 0)
        .filter(|f| !f.is_empty())
        .map(|f| String::from_utf8_lossy(f).into_owned())
        .collect()
}

/// `(status letter, path)` pairs of `git diff --name-status -z`.
fn name_status(bytes: &[u8]) -> Vec<(char, String)> {
    let parts = fields(bytes);
    parts
        .chunks(2)
        .filter_map(|pair| match pair {
            [status, path] => status.chars().next().map(|c| (c, path.clone())),
            _ => None,
        })
        .collect()
}

fn kind_of(status: char) -> &'static str {
    match status {
        'A' => "added",
        'D' => "deleted",
        _ => "modified",
    }
}

/// A diff's text as answered: git's, its last newline trimmed; `None` past the bound.
fn bounded(diff: Vec<u8>) -> Option<String> {
    if diff.len() > MAX_FILE_DIFF_BYTES {
        return None;
    }
    let text = String::from_utf8_lossy(&diff).into_owned();
    Some(text.strip_suffix('\n').unwrap_or(&text).to_owned())
}

/// An untracked file's diff, written as the runtime writes it (no index line; the hunk names
/// its line count).
fn untracked_diff(path: &str, content: &[u8]) -> Option<String> {
    if content.len() > MAX_FILE_DIFF_BYTES {
        return None;
    }
    let head = format!("diff --git a/{path} b/{path}\nnew file mode 100644\n");
    let Ok(text) = std::str::from_utf8(content) else {
        return Some(format!("{head}Binary files /dev/null and b/{path} differ"));
    };
    if text.is_empty() {
        return Some(head.trim_end().to_owned());
    }
    let lines: Vec<&str> = text
        .strip_suffix('\n')
        .unwrap_or(text)
        .split('\n')
        .collect();
    let mut out = format!(
        "{head}--- /dev/null\n+++ b/{path}\n@@ -0,0 +1,{} @@",
        lines.len()
    );
    for line in lines {
        out.push_str("\n+");
        out.push_str(line);
    }
    Some(out)
}

/// The changes of the working tree (index and untracked files included) against `base`.
async fn changes_against(cwd: &Path, base: &str, ignore_whitespace: bool) -> Option<Vec<Change>> {
    let space: &[&str] = if ignore_whitespace {
        &["--ignore-all-space"]
    } else {
        &[]
    };
    let mut listing = vec!["diff", "--no-renames", "--name-status", "-z"];
    listing.extend_from_slice(space);
    listing.push(base);
    let tracked = name_status(&git(cwd, &listing).await?);
    let untracked = fields(&git(cwd, &["ls-files", "--others", "--exclude-standard", "-z"]).await?);
    let mut changes = Vec::new();
    for (status, path) in tracked {
        changes.push(Change {
            path,
            kind: kind_of(status),
            untracked: false,
            diff: None,
        });
    }
    for path in untracked {
        changes.push(Change {
            path,
            kind: "added",
            untracked: true,
            diff: None,
        });
    }
    changes.sort_by(|a, b| a.path.cmp(&b.path));
    changes.dedup_by(|a, b| a.path == b.path);
    changes.truncate(MAX_DIFF_FILES);
    for change in &mut changes {
        change.diff = if change.untracked {
            match std::fs::read(cwd.join(&change.path)) {
                Ok(content) => untracked_diff(&change.path, &content),
                Err(_) => Some(String::new()),
            }
        } else {
            let mut args = vec!["diff", "--no-color", "--no-ext-diff", "--no-renames"];
            args.extend_from_slice(space);
            args.extend_from_slice(&[base, "--", change.path.as_str()]);
            match git(cwd, &args).await {
                Some(diff) => bounded(diff),
                None => Some(String::new()),
            }
        };
    }
    Some(changes)
}

/// The default branch a `branch` diff compares with.
async fn default_branch(cwd: &Path) -> String {
    if let Some(out) = git(
        cwd,
        &["symbolic-ref", "--quiet", "refs/remotes/origin/HEAD"],
    )
    .await
    {
        let name = String::from_utf8_lossy(&out).trim().to_owned();
        if let Some(branch) = name.strip_prefix("refs/remotes/origin/") {
            return branch.to_owned();
        }
    }
    for candidate in ["main", "master"] {
        let reference = format!("refs/heads/{candidate}");
        if git(cwd, &["rev-parse", "--verify", "--quiet", &reference])
            .await
            .is_some()
        {
            return candidate.to_owned();
        }
    }
    "main".to_owned()
}

/// `session.workspaces.diff`: `{requestedMode, mode, changes, isFallback}` (and `baseBranch`,
/// `unavailableReason` where they apply).
pub(crate) async fn diff(ctx: &Ctx<'_>, params: DiffParams) -> Result<Value, RpcError> {
    let session = open_session(ctx, &params.session_id)?;
    let cwd = session.info().cwd;
    let in_git = git(&cwd, &["rev-parse", "--is-inside-work-tree"])
        .await
        .is_some_and(|out| out.starts_with(b"true"));
    let unstaged =
        |changes: Vec<Change>| -> Vec<Value> { changes.iter().map(Change::to_json).collect() };
    let working = if in_git {
        // A repository without a commit has no HEAD: its changes are against git's empty tree.
        let head = if git(&cwd, &["rev-parse", "--verify", "--quiet", "HEAD"])
            .await
            .is_some()
        {
            "HEAD"
        } else {
            "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
        };
        changes_against(&cwd, head, params.ignore_whitespace)
            .await
            .ok_or_else(|| {
                RpcError::new(
                    codes::SESSION_FAILED,
                    format!("git could not list the changes in {}", cwd.display()),
                )
            })?
    } else {
        Vec::new()
    };
    let requested = params.mode.as_str();
    let answer = match params.mode {
        Mode::Unstaged => json!({
            "requestedMode": requested, "mode": "unstaged",
            "changes": unstaged(working), "isFallback": false,
        }),
        Mode::Session => json!({
            "requestedMode": requested, "mode": "unstaged",
            "changes": unstaged(working), "isFallback": true,
            "unavailableReason": "file-change-tracking-disabled",
        }),
        Mode::Branch => {
            let base = if in_git {
                default_branch(&cwd).await
            } else {
                "main".to_owned()
            };
            let fork = if in_git {
                git(&cwd, &["merge-base", &base, "HEAD"]).await
            } else {
                None
            };
            let since_fork = match fork {
                Some(out) => {
                    let commit = String::from_utf8_lossy(&out).trim().to_owned();
                    changes_against(&cwd, &commit, params.ignore_whitespace).await
                }
                None => None,
            };
            match since_fork {
                Some(changes) => json!({
                    "requestedMode": requested, "mode": "branch",
                    "changes": unstaged(changes), "baseBranch": base, "isFallback": false,
                }),
                None => json!({
                    "requestedMode": requested, "mode": "unstaged",
                    "changes": unstaged(working), "baseBranch": base, "isFallback": true,
                }),
            }
        }
    };
    Ok(answer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_untracked_file_is_written_as_the_runtime_writes_it() {
        assert_eq!(
            untracked_diff("u.txt", b"new\n").unwrap(),
            "diff --git a/u.txt b/u.txt\nnew file mode 100644\n--- /dev/null\n+++ b/u.txt\n@@ -0,0 +1,1 @@\n+new"
        );
        assert!(
            untracked_diff("b.bin", &[0xff, 0x00])
                .unwrap()
                .ends_with("differ")
        );
        assert!(untracked_diff("big", &vec![b'a'; MAX_FILE_DIFF_BYTES + 1]).is_none());
    }

    #[test]
    fn name_status_pairs_letters_with_paths() {
        assert_eq!(
            name_status(b"M\0t.txt\0D\0g.txt\0A\0s p.txt\0"),
            [
                ('M', "t.txt".into()),
                ('D', "g.txt".into()),
                ('A', "s p.txt".into())
            ]
        );
    }
}
