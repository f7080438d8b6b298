//! The git repository a working directory is in, as the Copilot CLI records it in
//! `session.start.data.context` and `workspace.yaml`: the repository's root, its hosted name
//! and host (from a remote's URL), the branch and the head commit.
//!
//! Read from the repository's files (`.git`, `HEAD`, `refs/`, `packed-refs`, `config`) without
//! starting `git` or a shell: a session's start never waits on a process, and a hostile
//! repository's configuration (`core.fsmonitor`, hooks, aliases) runs nothing. Each file is
//! read up to [`MAX_GIT_FILE_BYTES`]; a repository this reader does not understand (a
//! `reftable` ref store, a file over the cap) gives fewer fields, never an error: the context
//! is information, not something a session depends on.
//!
//! What the CLI writes, recorded with 1.0.81-0 (see `docs/journal-format.md`):
//! - outside a repository: nothing but the working directory;
//! - `gitRoot`: the top of the work tree (a linked worktree's own directory), symbolic links
//!   resolved;
//! - `branch`: the branch `HEAD` names (also before the first commit), or
//!   `detached@<7 hex digits>` on a detached `HEAD`;
//! - `headCommit`: the commit `HEAD` resolves to, absent before the first commit;
//! - `repository`, `hostType`, `repositoryHost`: from the URL of `origin` (else of the first
//!   remote), only for GitHub (`github.com`, `*.ghe.com`: `owner/name`) and Azure DevOps
//!   (`dev.azure.com`, `ssh.dev.azure.com`: `org/project/repo`; `*.visualstudio.com`:
//!   `project/repo`); any other host gives none of the three.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

/// The most bytes read of one of the repository's files (`HEAD`, a ref, `config`,
/// `packed-refs`); a longer file is read no further.
pub const MAX_GIT_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// How many directories up from the working directory a `.git` is looked for.
const MAX_DEPTH: usize = 256;

/// The repository facts of a working directory; every field absent outside a repository.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GitContext {
    /// The top of the work tree.
    pub git_root: Option<PathBuf>,
    /// `owner/name` (GitHub), `org/project/repo` or `project/repo` (Azure DevOps).
    pub repository: Option<String>,
    /// `github` or `ado`.
    pub host_type: Option<String>,
    /// The remote URL's host, e.g. `github.com`.
    pub repository_host: Option<String>,
    /// The current branch, or `detached@<short commit>`.
    pub branch: Option<String>,
    /// The commit `HEAD` resolves to.
    pub head_commit: Option<String>,
}

impl GitContext {
    /// The context of `cwd` (nothing when it is in no repository or cannot be read).
    pub fn of(cwd: &Path) -> Self {
        let start = std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_path_buf());
        let Some((root, git_dir)) = find_repository(&start) else {
            return GitContext::default();
        };
        let common = common_dir(&git_dir);
        let mut context = GitContext {
            git_root: Some(root),
            ..Default::default()
        };
        let head = read_small(&git_dir.join("HEAD")).unwrap_or_default();
        let head = head.trim();
        if let Some(reference) = head.strip_prefix("ref:") {
            let reference = reference.trim();
            context.branch = Some(
                reference
                    .strip_prefix("refs/heads/")
                    .unwrap_or(reference)
                    .to_string(),
            );
            context.head_commit = resolve_ref(&git_dir, &common, reference);
        } else if is_object_id(head) {
            context.branch = Some(format!("detached@{}", &head[..7]));
            context.head_commit = Some(head.to_string());
        }
        if let Some(hosted) = read_small(&common.join("config"))
            .and_then(|c| remote_url(&c))
            .and_then(|url| hosted_repository(&url))
        {
            context.repository = Some(hosted.repository);
            context.host_type = Some(hosted.host_type.to_string());
            context.repository_host = Some(hosted.host);
        }
        context
    }
}

/// The work tree's top and its git directory: the nearest `.git` directory, or `.git` file
/// (`gitdir: PATH`, a linked worktree or a submodule), at or above `start`.
fn find_repository(start: &Path) -> Option<(PathBuf, PathBuf)> {
    for dir in start.ancestors().take(MAX_DEPTH) {
        let dot_git = dir.join(".git");
        let Ok(meta) = std::fs::metadata(&dot_git) else {
            continue;
        };
        if meta.is_dir() {
            if dot_git.join("HEAD").is_file() {
                return Some((dir.to_path_buf(), dot_git));
            }
            continue;
        }
        let text = read_small(&dot_git)?;
        let target = text.trim().strip_prefix("gitdir:")?.trim();
        let git_dir = dir.join(target);
        return git_dir
            .join("HEAD")
            .is_file()
            .then(|| (dir.to_path_buf(), git_dir));
    }
    None
}

/// The directory holding the shared refs and config: `commondir` of a linked worktree's git
/// directory, else the git directory itself.
fn common_dir(git_dir: &Path) -> PathBuf {
    match read_small(&git_dir.join("commondir")) {
        Some(text) if !text.trim().is_empty() => git_dir.join(text.trim()),
        _ => git_dir.to_path_buf(),
    }
}

/// The commit a ref names: its loose file (in the worktree's or the common directory), else
/// its line in `packed-refs`; a symbolic ref is followed a few times.
fn resolve_ref(git_dir: &Path, common: &Path, reference: &str) -> Option<String> {
    let mut reference = reference.to_string();
    for _ in 0..5 {
        if reference
            .split('/')
            .any(|part| part == ".." || part.is_empty())
        {
            return None;
        }
        let loose = [git_dir, common]
            .iter()
            .find_map(|base| read_small(&base.join(&reference)));
        match loose.as_deref().map(str::trim) {
            Some(text) if is_object_id(text) => return Some(text.to_string()),
            Some(text) => match text.strip_prefix("ref:") {
                Some(next) => reference = next.trim().to_string(),
                None => return None,
            },
            None => return packed_ref(common, &reference),
        }
    }
    None
}

/// A ref's commit from `packed-refs` (`<id> <name>` lines), read line by line within the cap.
fn packed_ref(common: &Path, reference: &str) -> Option<String> {
    let file = File::open(common.join("packed-refs")).ok()?;
    let reader = BufReader::new(file.take(MAX_GIT_FILE_BYTES));
    for line in reader.lines() {
        let line = line.ok()?;
        if let Some((id, name)) = line.split_once(' ')
            && name.trim_end() == reference
            && is_object_id(id)
        {
            return Some(id.to_string());
        }
    }
    None
}

/// Whether `text` is a full object id (SHA-1 or SHA-256, lower-case hex).
fn is_object_id(text: &str) -> bool {
    (text.len() == 40 || text.len() == 64)
        && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// A file's text, at most [`MAX_GIT_FILE_BYTES`] of it; `None` when unreadable or not UTF-8.
fn read_small(path: &Path) -> Option<String> {
    let mut text = String::new();
    File::open(path)
        .ok()?
        .take(MAX_GIT_FILE_BYTES)
        .read_to_string(&mut text)
        .ok()?;
    Some(text)
}

/// The URL of remote `origin`, else of the first remote with a URL, from a git config.
fn remote_url(config: &str) -> Option<String> {
    let mut section: Option<String> = None;
    let mut urls: Vec<(String, String)> = Vec::new();
    for line in config.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            section = remote_section(line);
            continue;
        }
        let Some(remote) = &section else { continue };
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        if key.trim().eq_ignore_ascii_case("url") && !urls.iter().any(|(r, _)| r == remote) {
            urls.push((remote.clone(), unquote(value.trim())));
        }
    }
    urls.iter()
        .find(|(remote, _)| remote == "origin")
        .or_else(|| urls.first())
        .map(|(_, url)| url.clone())
}

/// The remote a section header names (`[remote "origin"]`).
fn remote_section(header: &str) -> Option<String> {
    let inner = header.strip_prefix('[')?.split(']').next()?.trim();
    let (kind, name) = inner.split_once(char::is_whitespace)?;
    if !kind.eq_ignore_ascii_case("remote") {
        return None;
    }
    Some(unquote(name.trim()))
}

/// A config value without its surrounding quotes and trailing comment.
fn unquote(value: &str) -> String {
    let value = value.trim();
    if let Some(inner) = value.strip_prefix('"') {
        return inner.split('"').next().unwrap_or_default().to_string();
    }
    value
        .split([';', '#'])
        .next()
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// A repository on a host the CLI names.
#[derive(Debug, PartialEq, Eq)]
struct Hosted {
    repository: String,
    host_type: &'static str,
    host: String,
}

/// The hosted repository a remote URL names (`https://`, `ssh://`, `git://` or scp-like
/// `user@host:path`), for the hosts the CLI recognises.
fn hosted_repository(url: &str) -> Option<Hosted> {
    let (host, path) = if let Some((_, rest)) = url.split_once("://") {
        let (authority, path) = rest.split_once('/')?;
        let host = authority.rsplit('@').next()?;
        (host.split(':').next()?.to_string(), path.to_string())
    } else {
        let (user_host, path) = url.split_once(':')?;
        (user_host.rsplit('@').next()?.to_string(), path.to_string())
    };
    let host = host.to_ascii_lowercase();
    let path = path.trim_matches('/');
    let path = path.strip_suffix(".git").unwrap_or(path);
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    let (repository, host_type) = if host == "github.com" || host.ends_with(".ghe.com") {
        match parts.as_slice() {
            [owner, name] => (format!("{owner}/{name}"), "github"),
            _ => return None,
        }
    } else if host == "dev.azure.com" {
        match parts.as_slice() {
            [org, project, "_git", repo] => (format!("{org}/{project}/{repo}"), "ado"),
            _ => return None,
        }
    } else if host == "ssh.dev.azure.com" {
        match parts.as_slice() {
            ["v3", org, project, repo] => (format!("{org}/{project}/{repo}"), "ado"),
            _ => return None,
        }
    } else if host.ends_with(".visualstudio.com") {
        match parts.as_slice() {
            [project, "_git", repo] => (format!("{project}/{repo}"), "ado"),
            _ => return None,
        }
    } else {
        return None;
    };
    Some(Hosted {
        repository,
        host_type,
        host,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hosted(url: &str) -> Option<(String, &'static str, String)> {
        hosted_repository(url).map(|h| (h.repository, h.host_type, h.host))
    }

    #[test]
    fn remote_urls_name_repositories_as_the_cli_does() {
        // Each pair as the Copilot CLI 1.0.81-0 recorded it.
        let github = |r: &str, h: &str| Some((r.to_string(), "github", h.to_string()));
        let ado = |r: &str, h: &str| Some((r.to_string(), "ado", h.to_string()));
        assert_eq!(
            hosted("https://github.com/acme/widgets.git"),
            github("acme/widgets", "github.com")
        );
        assert_eq!(
            hosted("https://github.com/acme/widgets"),
            github("acme/widgets", "github.com")
        );
        assert_eq!(
            hosted("git@github.com:acme/widgets.git"),
            github("acme/widgets", "github.com")
        );
        assert_eq!(
            hosted("ssh://git@github.com/acme/widgets.git"),
            github("acme/widgets", "github.com")
        );
        assert_eq!(
            hosted("https://user:tok@github.com/Acme/Widgets.git/"),
            github("Acme/Widgets", "github.com")
        );
        assert_eq!(
            hosted("https://acme.ghe.com/org/repo.git"),
            github("org/repo", "acme.ghe.com")
        );
        assert_eq!(
            hosted("https://dev.azure.com/org/proj/_git/repo"),
            ado("org/proj/repo", "dev.azure.com")
        );
        assert_eq!(
            hosted("git@ssh.dev.azure.com:v3/org/proj/repo"),
            ado("org/proj/repo", "ssh.dev.azure.com")
        );
        assert_eq!(
            hosted("https://org.visualstudio.com/proj/_git/repo"),
            ado("proj/repo", "org.visualstudio.com")
        );
        assert_eq!(hosted("https://gitlab.com/acme/widgets.git"), None);
        assert_eq!(hosted("/srv/git/widgets.git"), None);
    }

    #[test]
    fn origin_wins_else_the_first_remote() {
        let config = "[core]\n\tbare = false\n[remote \"upstream\"]\n\turl = https://github.com/up/stream.git\n[remote \"origin\"]\n\turl = \"git@github.com:me/fork.git\" ; mine\n";
        assert_eq!(
            remote_url(config).as_deref(),
            Some("git@github.com:me/fork.git")
        );
        let config = "[remote \"upstream\"]\n\turl = https://github.com/up/stream.git\n";
        assert_eq!(
            remote_url(config).as_deref(),
            Some("https://github.com/up/stream.git")
        );
        assert_eq!(remote_url("[core]\n\turl = x\n"), None);
    }
}
