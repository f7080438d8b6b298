//! A session directory's `workspace.yaml` and the folders the Copilot CLI keeps beside the
//! journal (`checkpoints/` with its `index.md`, `files/`, `research/`), written as the CLI
//! 1.0.81-0 writes them, so that tools reading `session-state/` find a session's working
//! directory, repository, name and dates where they look for them.
//!
//! `workspace.yaml` is replaced whole ([`crate::AtomicWrite`], mode 0600 as the CLI's); its
//! keys in the CLI's order:
//!
//! ```yaml
//! id: 4411488c-e7b6-4328-b266-cdf491e0f73c
//! cwd: /home/u/project
//! git_root: /home/u/project        # the four git keys only inside a repository,
//! repository: acme/widgets         # repository and host_type only for a hosted remote
//! host_type: github
//! branch: main
//! client_name: sdk                 # `sdk` for an SDK client, `github/cli` for a prompt run
//! name: Fix the failing test       # from the first prompt, once there is one
//! user_named: false
//! summary_count: 0
//! created_at: 2026-12-07T07:16:41.522Z
//! updated_at: 2026-12-07T07:16:41.700Z
//! ```

use std::io::{self, Write};
use std::os::unix::fs::DirBuilderExt;
use std::path::Path;

use crate::atomic::{AtomicWrite, AtomicWriteError};
use crate::git_context::GitContext;

/// The file's name in a session directory.
pub const WORKSPACE_FILE: &str = "workspace.yaml";

/// The folders the CLI creates in every session directory, in its order.
pub const SESSION_FOLDERS: [&str; 3] = ["checkpoints", "files", "research"];

/// `checkpoints/index.md` as the CLI writes it before the first checkpoint.
pub const CHECKPOINT_INDEX: &str = "# Checkpoint History\n\nCheckpoints are listed in chronological order. Checkpoint 1 is the oldest, higher numbers are more recent.\n\n| # | Title | File |\n|---|-------|------|\n";

/// The most characters of the first prompt a session's name keeps (then `...`), as the CLI.
pub const MAX_NAME_CHARS: usize = 500;

/// What `workspace.yaml` says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Workspace {
    /// The session id.
    pub id: String,
    /// The working directory.
    pub cwd: String,
    /// The repository the working directory is in (git root, repository, host type, branch).
    pub git: GitContext,
    /// The kind of client that opened the session (`sdk`, `github/cli`).
    pub client_name: String,
    /// The session's name: its first prompt, cut at [`MAX_NAME_CHARS`].
    pub name: Option<String>,
    /// Whether a user named the session.
    pub user_named: bool,
    /// How many compaction summaries the session has.
    pub summary_count: u64,
    /// When the session was created (the runtime's timestamp spelling).
    pub created_at: String,
    /// When the file was last written.
    pub updated_at: String,
}

impl Workspace {
    /// The file's text.
    pub fn to_yaml(&self) -> String {
        let mut out = String::new();
        push_entry(&mut out, "id", &self.id);
        out.push_str(&self.location_lines());
        push_entry(&mut out, "client_name", &self.client_name);
        if let Some(name) = &self.name {
            push_entry(&mut out, "name", name);
        }
        // A boolean and a number, written as such (not as strings).
        out.push_str(&format!(
            "user_named: {}\nsummary_count: {}\n",
            self.user_named, self.summary_count
        ));
        push_entry(&mut out, "created_at", &self.created_at);
        push_entry(&mut out, "updated_at", &self.updated_at);
        out
    }

    /// The `cwd` line and the repository's lines (`git_root`, `repository` and `host_type`
    /// for a hosted remote, `branch`), in the CLI's order.
    fn location_lines(&self) -> String {
        let mut out = String::new();
        push_entry(&mut out, "cwd", &self.cwd);
        if let Some(root) = &self.git.git_root {
            push_entry(&mut out, "git_root", &root.display().to_string());
        }
        if let (Some(repository), Some(host_type)) = (&self.git.repository, &self.git.host_type) {
            push_entry(&mut out, "repository", repository);
            push_entry(&mut out, "host_type", host_type);
        }
        if let Some(branch) = &self.git.branch {
            push_entry(&mut out, "branch", branch);
        }
        out
    }

    /// Replaces `dir/workspace.yaml` atomically (mode 0600).
    pub fn write(&self, dir: &Path) -> Result<(), AtomicWriteError> {
        let text = self.to_yaml();
        AtomicWrite::new(&dir.join(WORKSPACE_FILE))
            .mode(0o600)
            .write(|out| out.write_all(text.as_bytes()))
    }
}

/// The most bytes of an existing `workspace.yaml` a resume reads to bring it up to date; a
/// larger file is left as it is (the CLI's is a few hundred bytes; a name is at most
/// [`MAX_NAME_CHARS`] characters).
pub const MAX_WORKSPACE_FILE_BYTES: u64 = 64 * 1024;

/// The entries a resume writes again: where the session works now.
const LOCATION_KEYS: [&str; 5] = ["cwd", "git_root", "repository", "host_type", "branch"];

/// What [`refresh`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refreshed {
    /// The file was rewritten with the new location and `updated_at`.
    Updated,
    /// There is no file (the caller writes a whole one).
    Missing,
    /// The file is not one this reader rewrites (not a regular file, over
    /// [`MAX_WORKSPACE_FILE_BYTES`], not UTF-8): left as it is.
    LeftAsIs,
}

/// Brings an existing `workspace.yaml` up to date on a resume, as the Copilot CLI does: `cwd`
/// and the repository entries (`git_root`, `repository`, `host_type`, `branch`) as they are
/// now, and `updated_at`. Every other entry (`name`, `user_named`, `summary_count`,
/// `created_at`, keys this version does not know) is kept as written and where it was, so a
/// name a user gave and a newer runtime's keys survive. Nothing is followed: a link in the
/// file's place is left as it is.
pub fn refresh(
    dir: &Path,
    cwd: &str,
    git: &GitContext,
    updated_at: &str,
) -> Result<Refreshed, AtomicWriteError> {
    rewrite(dir, |old| {
        let location = Workspace {
            cwd: cwd.to_string(),
            git: git.clone(),
            ..Default::default()
        }
        .location_lines();
        let mut out = String::new();
        let mut placed = false;
        let mut dated = false;
        for entry in entries(old) {
            match entry_key(entry) {
                Some(key) if LOCATION_KEYS.contains(&key) => continue,
                Some("updated_at") => {
                    push_entry(&mut out, "updated_at", updated_at);
                    dated = true;
                    continue;
                }
                Some("id") => {
                    out.push_str(entry);
                    out.push_str(&location);
                    placed = true;
                    continue;
                }
                _ => {}
            }
            out.push_str(entry);
        }
        if !placed {
            out.insert_str(0, &location);
        }
        if !dated {
            push_entry(&mut out, "updated_at", updated_at);
        }
        out
    })
}

/// Names the session in an existing `workspace.yaml`, as the Copilot CLI does for a name a
/// user gives (`user_named: true`) or one it makes up (`false`): `name`, `user_named` and
/// `updated_at` rewritten, every other entry kept as written and where it was.
pub fn set_name(
    dir: &Path,
    name: &str,
    user_named: bool,
    updated_at: &str,
) -> Result<Refreshed, AtomicWriteError> {
    rewrite(dir, |old| {
        let mut named = String::new();
        push_entry(&mut named, "name", name);
        named.push_str(&format!("user_named: {user_named}\n"));
        let mut out = String::new();
        let mut placed = false;
        let mut dated = false;
        for entry in entries(old) {
            match entry_key(entry) {
                Some("name" | "user_named") => continue,
                // The CLI's place for the name: after the client, before the summaries.
                Some("summary_count" | "created_at" | "updated_at") if !placed => {
                    out.push_str(&named);
                    placed = true;
                }
                _ => {}
            }
            if entry_key(entry) == Some("updated_at") {
                push_entry(&mut out, "updated_at", updated_at);
                dated = true;
                continue;
            }
            out.push_str(entry);
        }
        if !placed {
            out.push_str(&named);
        }
        if !dated {
            push_entry(&mut out, "updated_at", updated_at);
        }
        out
    })
}

/// Rewrites an existing `workspace.yaml` whole with `edit`'s text for its old one.
fn rewrite(dir: &Path, edit: impl FnOnce(&str) -> String) -> Result<Refreshed, AtomicWriteError> {
    let path = dir.join(WORKSPACE_FILE);
    let Some(old) = read_existing(&path)? else {
        return Ok(Refreshed::Missing);
    };
    let Some(old) = old else {
        return Ok(Refreshed::LeftAsIs);
    };
    let out = edit(&old);
    AtomicWrite::new(&path)
        .mode(0o600)
        .write(|file| file.write_all(out.as_bytes()))?;
    Ok(Refreshed::Updated)
}

/// The text of an existing `workspace.yaml`: `None` when there is none, `Some(None)` when it is
/// not a regular file, too large or not UTF-8.
fn read_existing(path: &Path) -> Result<Option<Option<String>>, AtomicWriteError> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::File::options()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path);
    let file = match file {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        // A link in the file's place (ELOOP), or anything else that is not a file to read.
        Err(_) => return Ok(Some(None)),
    };
    let regular = file.metadata().map(|m| m.is_file()).unwrap_or(false);
    if !regular {
        return Ok(Some(None));
    }
    let mut bytes = Vec::new();
    file.take(MAX_WORKSPACE_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|source| AtomicWriteError::Write {
            target: path.to_path_buf(),
            source,
        })?;
    if bytes.len() as u64 > MAX_WORKSPACE_FILE_BYTES {
        return Ok(Some(None));
    }
    Ok(Some(String::from_utf8(bytes).ok()))
}

/// The entries of `dir/workspace.yaml` as written (key and value, in the file's order), for a
/// client asking what the session's workspace says: `None` when there is none; a file that is
/// not a regular file, over [`MAX_WORKSPACE_FILE_BYTES`] or not UTF-8 reads as no entries.
/// Values are the scalars this module writes (plain, double-quoted, `|-` block).
pub fn read_entries(dir: &Path) -> Result<Option<Vec<(String, String)>>, AtomicWriteError> {
    let Some(text) = read_existing(&dir.join(WORKSPACE_FILE))? else {
        return Ok(None);
    };
    let Some(text) = text else {
        return Ok(Some(Vec::new()));
    };
    let mut out = Vec::new();
    for entry in entries(&text) {
        let Some(key) = entry_key(entry) else {
            continue;
        };
        let value = entry[key.len() + 1..].trim_end_matches(['\n', '\r']);
        out.push((key.to_string(), scalar_value(value)));
    }
    Ok(Some(out))
}

/// A value written by [`yaml_scalar`] (with its leading space), read back.
fn scalar_value(value: &str) -> String {
    if let Some(block) = value.strip_prefix(" |-") {
        let lines: Vec<&str> = block
            .split('\n')
            .skip(1)
            .map(|l| l.strip_prefix("  ").unwrap_or(l.trim_start()))
            .collect();
        return lines.join("\n");
    }
    let value = value.trim();
    if value.starts_with('"')
        && let Ok(serde_json::Value::String(text)) = serde_json::from_str(value)
    {
        return text;
    }
    value.to_string()
}

/// The file's top-level entries, each with its continuation lines (a `|-` block's indented
/// lines) and its line ends.
fn entries(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        let top = !line.starts_with([' ', '\t', '\n', '\r']) && at > start;
        if top {
            out.push(&text[start..at]);
            start = at;
        }
        at += line.len();
    }
    if at > start {
        out.push(&text[start..at]);
    }
    out
}

/// The key of a top-level entry (`key: value`), if it has one.
fn entry_key(entry: &str) -> Option<&str> {
    let (key, _) = entry.split_once(':')?;
    (!key.is_empty() && !key.contains([' ', '\n', '#'])).then_some(key)
}

/// A session's name from its first prompt: at most [`MAX_NAME_CHARS`] characters, `...` added
/// when cut.
pub fn session_name(prompt: &str) -> String {
    match prompt.char_indices().nth(MAX_NAME_CHARS) {
        Some((cut, _)) => format!("{}...", &prompt[..cut]),
        None => prompt.to_string(),
    }
}

/// Creates the CLI's folders in a session directory (mode 0700) and `checkpoints/index.md`
/// when missing; existing ones are left as they are.
pub fn create_session_folders(dir: &Path) -> Result<(), AtomicWriteError> {
    for name in SESSION_FOLDERS {
        let path = dir.join(name);
        match std::fs::DirBuilder::new().mode(0o700).create(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && path.is_dir() => {}
            Err(source) => return Err(AtomicWriteError::Create { tmp: path, source }),
        }
    }
    let index = dir.join("checkpoints").join("index.md");
    if std::fs::symlink_metadata(&index).is_err() {
        AtomicWrite::new(&index)
            .mode(0o644)
            .write(|out| out.write_all(CHECKPOINT_INDEX.as_bytes()))?;
    }
    Ok(())
}

/// Appends `key: value` and a line end.
fn push_entry(out: &mut String, key: &str, value: &str) {
    out.push_str(key);
    out.push(':');
    out.push_str(&yaml_scalar(value));
    out.push('\n');
}

/// `value` as a YAML scalar after `key:` (with its leading space): plain when YAML reads it
/// back as the same string, a `|-` block for several lines, double-quoted otherwise.
fn yaml_scalar(value: &str) -> String {
    if value.contains('\n') && block_safe(value) {
        let mut out = String::from(" |-");
        for l in value.split('\n') {
            out.push('\n');
            if !l.is_empty() {
                out.push_str("  ");
                out.push_str(l);
            }
        }
        return out;
    }
    if plain_safe(value) {
        return format!(" {value}");
    }
    // A JSON string is a YAML double-quoted scalar.
    format!(" {}", serde_json::Value::String(value.to_string()))
}

/// Whether a multi-line value survives a `|-` literal block unchanged.
fn block_safe(value: &str) -> bool {
    let first = value.split('\n').next().unwrap_or_default();
    !value.ends_with('\n')
        && !first.starts_with(' ')
        && !first.is_empty()
        && value.chars().all(|c| c == '\n' || !c.is_control())
}

/// Whether a value reads back as the same string when written plain.
fn plain_safe(value: &str) -> bool {
    let Some(first) = value.chars().next() else {
        return false;
    };
    if value.trim() != value
        || "-?:,[]{}#&*!|>'\"%@`".contains(first)
        || value.contains(": ")
        || value.contains(" #")
        || value.ends_with(':')
        || value.chars().any(|c| c.is_control())
    {
        return false;
    }
    // Words YAML reads as something other than a string.
    let lower = value.to_ascii_lowercase();
    if matches!(
        lower.as_str(),
        "true"
            | "false"
            | "yes"
            | "no"
            | "on"
            | "off"
            | "y"
            | "n"
            | "null"
            | "~"
            | ".nan"
            | ".inf"
            | "-.inf"
            | "+.inf"
    ) {
        return false;
    }
    // Numbers (and the timestamps the file holds on purpose stay plain, as the CLI writes).
    let numeric = value.bytes().all(|b| {
        b.is_ascii_digit() || matches!(b, b'.' | b'+' | b'-' | b'e' | b'E' | b'x' | b'o' | b'_')
    });
    !(numeric && value.bytes().any(|b| b.is_ascii_digit()))
        || value.len() == 36 && value.bytes().filter(|b| *b == b'-').count() == 4
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workspace() -> Workspace {
        Workspace {
            id: "200274fe-5260-4296-ad55-987dc88f3446".into(),
            cwd: "/tmp/h4exp/c-remote/project".into(),
            git: GitContext {
                git_root: Some("/tmp/h4exp/c-remote/project".into()),
                repository: Some("acme/widgets".into()),
                host_type: Some("github".into()),
                repository_host: Some("github.com".into()),
                branch: Some("feature/x".into()),
                head_commit: Some("3c1e3141bb0c58959a9bf5a2c6a5ea8bd3549e83".into()),
            },
            client_name: "sdk".into(),
            name: Some("Fix: the bug's #1 \"thing\" - yes\nsecond line: here".into()),
            user_named: false,
            summary_count: 0,
            created_at: "2026-12-07T07:16:41.522Z".into(),
            updated_at: "2026-12-07T07:16:41.700Z".into(),
        }
    }

    #[test]
    fn entries_read_back_as_written() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read_entries(dir.path()).unwrap(), None);
        let mut quoted = workspace();
        quoted.client_name = "a: \"b\"".into();
        for written in [workspace(), quoted] {
            written.write(dir.path()).unwrap();
            let read = read_entries(dir.path()).unwrap().unwrap();
            let get = |key: &str| read.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone());
            assert_eq!(get("id").as_deref(), Some(written.id.as_str()));
            assert_eq!(get("name"), written.name);
            assert_eq!(get("client_name"), Some(written.client_name.clone()));
            assert_eq!(get("user_named").as_deref(), Some("false"));
            assert_eq!(get("branch").as_deref(), Some("feature/x"));
            assert_eq!(read.last().unwrap().0, "updated_at");
        }
    }

    #[test]
    fn a_name_is_set_where_the_cli_keeps_it() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            set_name(dir.path(), "x", true, "t").unwrap(),
            Refreshed::Missing
        );
        let unnamed = Workspace {
            name: None,
            ..workspace()
        };
        unnamed.write(dir.path()).unwrap();
        set_name(dir.path(), "hello", true, "2026-12-07T08:00:00.000Z").unwrap();
        let named = Workspace {
            name: Some("hello".into()),
            user_named: true,
            updated_at: "2026-12-07T08:00:00.000Z".into(),
            ..workspace()
        };
        let text = std::fs::read_to_string(dir.path().join(WORKSPACE_FILE)).unwrap();
        assert_eq!(text, named.to_yaml());
        // Named again: one name, the new one.
        set_name(dir.path(), "two\nlines", false, "2026-12-07T09:00:00.000Z").unwrap();
        let renamed = Workspace {
            name: Some("two\nlines".into()),
            updated_at: "2026-12-07T09:00:00.000Z".into(),
            ..workspace()
        };
        let text = std::fs::read_to_string(dir.path().join(WORKSPACE_FILE)).unwrap();
        assert_eq!(text, renamed.to_yaml());
    }

    #[test]
    fn the_file_is_the_clis_byte_for_byte() {
        // As the Copilot CLI 1.0.81-0 wrote it for the same session.
        let cli = "id: 200274fe-5260-4296-ad55-987dc88f3446\ncwd: /tmp/h4exp/c-remote/project\ngit_root: /tmp/h4exp/c-remote/project\nrepository: acme/widgets\nhost_type: github\nbranch: feature/x\nclient_name: sdk\nname: |-\n  Fix: the bug's #1 \"thing\" - yes\n  second line: here\nuser_named: false\nsummary_count: 0\ncreated_at: 2026-12-07T07:16:41.522Z\nupdated_at: 2026-12-07T07:16:41.700Z\n";
        assert_eq!(workspace().to_yaml(), cli);
        let outside = Workspace {
            git: GitContext::default(),
            name: None,
            ..workspace()
        };
        assert_eq!(
            outside.to_yaml(),
            "id: 200274fe-5260-4296-ad55-987dc88f3446\ncwd: /tmp/h4exp/c-remote/project\nclient_name: sdk\nuser_named: false\nsummary_count: 0\ncreated_at: 2026-12-07T07:16:41.522Z\nupdated_at: 2026-12-07T07:16:41.700Z\n"
        );
    }

    #[test]
    fn values_yaml_would_misread_are_quoted() {
        for (value, written) in [
            ("First prompt", " First prompt"),
            ("yes", " \"yes\""),
            ("123", " \"123\""),
            ("- item", " \"- item\""),
            ("a: b", " \"a: b\""),
            ("tab\there", " \"tab\\there\""),
            ("", " \"\""),
            (" lead\nx", " \" lead\\nx\""),
        ] {
            assert_eq!(yaml_scalar(value), written, "{value:?}");
        }
    }

    #[test]
    fn a_long_prompt_is_cut_at_500_characters() {
        let prompt = "long prompt word ".repeat(30);
        let name = session_name(prompt.trim_end());
        assert_eq!(name.chars().count(), 503);
        assert!(name.ends_with("long pr..."));
        assert_eq!(session_name("short"), "short");
    }

    #[test]
    fn a_resume_rewrites_the_location_and_keeps_the_rest() {
        let tmp = tempfile::tempdir().unwrap();
        // A file the CLI wrote, a name a user gave over two lines, a key of a newer runtime.
        let old = "id: 200274fe-5260-4296-ad55-987dc88f3446\ncwd: /old\ngit_root: /old\nrepository: acme/old\nhost_type: github\nbranch: main\nclient_name: github/cli\nname: |-\n  branch: not a key\n  second\nuser_named: true\nsummary_count: 2\nmc_task_id: t-1\ncreated_at: 2026-12-07T07:16:41.522Z\nupdated_at: 2026-12-07T07:16:41.700Z\n";
        std::fs::write(tmp.path().join(WORKSPACE_FILE), old).unwrap();
        let git = GitContext {
            git_root: Some("/new".into()),
            branch: Some("feature".into()),
            head_commit: Some("25a4c91789d5b6cf50e937c3a773e96ef22280c3".into()),
            ..Default::default()
        };
        let done = refresh(tmp.path(), "/new", &git, "2026-12-08T01:02:03.004Z").unwrap();
        assert_eq!(done, Refreshed::Updated);
        assert_eq!(
            std::fs::read_to_string(tmp.path().join(WORKSPACE_FILE)).unwrap(),
            "id: 200274fe-5260-4296-ad55-987dc88f3446\ncwd: /new\ngit_root: /new\nbranch: feature\nclient_name: github/cli\nname: |-\n  branch: not a key\n  second\nuser_named: true\nsummary_count: 2\nmc_task_id: t-1\ncreated_at: 2026-12-07T07:16:41.522Z\nupdated_at: 2026-12-08T01:02:03.004Z\n"
        );
        assert_eq!(
            refresh(&tmp.path().join("none"), "/new", &git, "x").unwrap(),
            Refreshed::Missing
        );
    }

    #[test]
    fn a_resume_leaves_a_link_or_an_oversized_file_alone() {
        let tmp = tempfile::tempdir().unwrap();
        let target = tmp.path().join("elsewhere.yaml");
        std::fs::write(&target, "id: x\n").unwrap();
        let dir = tmp.path().join("session");
        std::fs::create_dir(&dir).unwrap();
        std::os::unix::fs::symlink(&target, dir.join(WORKSPACE_FILE)).unwrap();
        let git = GitContext::default();
        assert_eq!(refresh(&dir, "/w", &git, "t").unwrap(), Refreshed::LeftAsIs);
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "id: x\n");
        std::fs::remove_file(dir.join(WORKSPACE_FILE)).unwrap();
        let big = format!(
            "id: x\nname: {}\n",
            "n".repeat(MAX_WORKSPACE_FILE_BYTES as usize)
        );
        std::fs::write(dir.join(WORKSPACE_FILE), &big).unwrap();
        assert_eq!(refresh(&dir, "/w", &git, "t").unwrap(), Refreshed::LeftAsIs);
        assert_eq!(
            std::fs::read_to_string(dir.join(WORKSPACE_FILE)).unwrap(),
            big
        );
    }

    #[test]
    fn folders_are_made_once_and_kept() {
        let tmp = tempfile::tempdir().unwrap();
        create_session_folders(tmp.path()).unwrap();
        std::fs::write(tmp.path().join("checkpoints/index.md"), "kept").unwrap();
        create_session_folders(tmp.path()).unwrap();
        for name in SESSION_FOLDERS {
            assert!(tmp.path().join(name).is_dir());
        }
        assert_eq!(
            std::fs::read_to_string(tmp.path().join("checkpoints/index.md")).unwrap(),
            "kept"
        );
    }
}
