//! `session.workspaces.*`: the session's workspace files, kept where the Copilot CLI keeps
//! them, under `files/` in the session's directory, and its `workspace.yaml` read back. Every
//! write is recorded as `session.workspace_file_changed {path, operation}` in the journal, as
//! the runtime records it, so a resume, a fork and an audit see it.
//!
//! A path is the client's, slash-separated and relative to `files/`; one that would leave it
//! (absolute, or `..` past its top) is refused in the runtime's words, and nothing is followed
//! through a link: a link anywhere on the way is refused the same way, so a workspace file is
//! never a door to the rest of the file system.

use std::io::Read;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Map, Value, json};
use turnstile_home::AtomicWrite;
use turnstile_home::workspace::{self, SESSION_FOLDERS};

use super::session_id_params::SessionIdParams;
use super::{Ctx, open_session};
use crate::rpc::{RpcError, codes};
use crate::sessions::OpenSession;

/// The workspace files' folder in a session directory (the CLI's `files/`).
pub(crate) const FILES_DIR: &str = SESSION_FOLDERS[1];

/// The most bytes `readFile` answers with (`TURNSTILE_…` has no say: a larger file is refused,
/// since the answer is one JSON-RPC frame held in memory whole).
pub(crate) const MAX_WORKSPACE_READ_BYTES: u64 = 8 * 1024 * 1024;

/// The most files `listFiles` walks (a larger folder is listed to this many, sorted).
pub(crate) const MAX_WORKSPACE_LIST_ENTRIES: usize = 10_000;

/// The deepest folder `listFiles` descends into below `files/`.
const MAX_WORKSPACE_DEPTH: usize = 32;

/// The runtime's refusal of a path outside `files/`, word for word.
const OUTSIDE: &str = "Path must be within the workspace files directory";

pub(crate) fn failed(what: impl std::fmt::Display) -> RpcError {
    RpcError::new(codes::SESSION_FAILED, what.to_string())
}

/// The open session and its `files/` folder.
pub(crate) fn files_dir(ctx: &Ctx<'_>, id: &str) -> Result<(Arc<OpenSession>, PathBuf), RpcError> {
    let session = open_session(ctx, id)?;
    let dir = ctx
        .server
        .config()
        .state_root
        .session(session.id())
        .dir
        .join(FILES_DIR);
    Ok((session, dir))
}

/// `path` made relative and normal (`a/./b/../c` is `a/c`), or the runtime's refusal when it
/// is absolute, empty or climbs out of the folder.
pub(crate) fn relative_path(path: &str) -> Result<PathBuf, RpcError> {
    let mut out = PathBuf::new();
    for part in Path::new(path).components() {
        match part {
            Component::Normal(name) => out.push(name),
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return Err(RpcError::invalid_params(OUTSIDE));
                }
            }
            Component::RootDir | Component::Prefix(_) => {
                return Err(RpcError::invalid_params(OUTSIDE));
            }
        }
    }
    if out.as_os_str().is_empty() {
        return Err(RpcError::invalid_params(OUTSIDE));
    }
    Ok(out)
}

/// Refuses a link at `base` or at any folder of `relative` below it that exists (the last
/// part is the caller's to open without following).
fn no_links_on_the_way(base: &Path, relative: &Path) -> Result<(), RpcError> {
    let mut at = base.to_path_buf();
    let parents: Vec<_> = relative
        .parent()
        .into_iter()
        .flat_map(Path::components)
        .collect();
    for part in std::iter::once(None).chain(parents.into_iter().map(Some)) {
        if let Some(part) = part {
            at.push(part);
        }
        match std::fs::symlink_metadata(&at) {
            Ok(meta) if meta.file_type().is_symlink() => {
                return Err(RpcError::invalid_params(OUTSIDE));
            }
            Ok(meta) if !meta.is_dir() => {
                return Err(failed(format!("{} is not a folder", at.display())));
            }
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(failed(format!("{}: {e}", at.display()))),
        }
    }
    Ok(())
}

/// `session.workspaces.listFiles`: `{files}`, the relative paths of the files under `files/`
/// (sorted; links are not followed or listed).
pub(crate) fn list_files(ctx: &Ctx<'_>, params: SessionIdParams) -> Result<Value, RpcError> {
    let (_, dir) = files_dir(ctx, params.id())?;
    Ok(json!({"files": files_under(&dir)}))
}

/// The relative paths of the regular files under `dir` (sorted; links neither followed nor
/// listed; at most [`MAX_WORKSPACE_LIST_ENTRIES`], [`MAX_WORKSPACE_DEPTH`] folders deep).
pub(crate) fn files_under(dir: &Path) -> Vec<String> {
    let mut files = Vec::new();
    walk(dir, "", 0, &mut files);
    files.sort();
    files
}

fn walk(dir: &Path, prefix: &str, depth: usize, out: &mut Vec<String>) {
    if depth > MAX_WORKSPACE_DEPTH {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        if out.len() >= MAX_WORKSPACE_LIST_ENTRIES {
            return;
        }
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = if prefix.is_empty() {
            name
        } else {
            format!("{prefix}/{name}")
        };
        if kind.is_dir() {
            walk(&entry.path(), &path, depth + 1, out);
        } else if kind.is_file() {
            out.push(path);
        }
    }
}

/// `session.workspaces.readFile` params.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ReadParams {
    session_id: String,
    path: String,
}

/// `session.workspaces.readFile`: `{content}` of a UTF-8 file under `files/`.
pub(crate) fn read_file(ctx: &Ctx<'_>, params: ReadParams) -> Result<Value, RpcError> {
    let (_, dir) = files_dir(ctx, &params.session_id)?;
    let relative = relative_path(&params.path)?;
    no_links_on_the_way(&dir, &relative)?;
    let path = dir.join(&relative);
    let file = std::fs::File::options()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => RpcError::invalid_params(OUTSIDE),
            _ => failed(format!("{}: {e}", params.path)),
        })?;
    let mut bytes = Vec::new();
    file.take(MAX_WORKSPACE_READ_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| failed(format!("{}: {e}", params.path)))?;
    if bytes.len() as u64 > MAX_WORKSPACE_READ_BYTES {
        return Err(failed(format!(
            "{} is larger than {MAX_WORKSPACE_READ_BYTES} bytes",
            params.path
        )));
    }
    let content = String::from_utf8(bytes)
        .map_err(|_| failed(format!("{} is not UTF-8 text", params.path)))?;
    Ok(json!({"content": content}))
}

/// `session.workspaces.createFile` params.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CreateParams {
    session_id: String,
    path: String,
    content: String,
}

/// `session.workspaces.createFile`: writes the file under `files/` whole (its folders made as
/// needed), recorded as `session.workspace_file_changed` (`create`, or `update` when it was
/// there); answers `null`.
pub(crate) async fn create_file(ctx: &Ctx<'_>, params: CreateParams) -> Result<Value, RpcError> {
    let (session, dir) = files_dir(ctx, &params.session_id)?;
    let relative = relative_path(&params.path)?;
    no_links_on_the_way(&dir, &relative)?;
    let path = dir.join(&relative);
    if let Some(parent) = path.parent() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(parent)
            .map_err(|e| failed(format!("{}: {e}", parent.display())))?;
    }
    // Made now: a link planted between the check and the folders is refused here.
    no_links_on_the_way(&dir, &relative)?;
    let existed = match std::fs::symlink_metadata(&path) {
        Ok(meta) if meta.is_file() => true,
        Ok(_) => return Err(RpcError::invalid_params(OUTSIDE)),
        Err(_) => false,
    };
    // Written beside and renamed into place: a link in the file's place is replaced, not
    // followed.
    AtomicWrite::new(&path)
        .mode(0o600)
        .write(|out| std::io::Write::write_all(out, params.content.as_bytes()))
        .map_err(failed)?;
    let slash_path = relative.to_string_lossy().into_owned();
    let operation = if existed { "update" } else { "create" };
    let data =
        serde_json::value::to_raw_value(&json!({"path": slash_path, "operation": operation}))
            .map_err(failed)?;
    session
        .handle()
        .record("session.workspace_file_changed", data)
        .await
        .map_err(failed)?;
    Ok(Value::Null)
}

/// `session.workspaces.getWorkspace`: `{workspace, path}`, what the session's `workspace.yaml`
/// says (its keys as written; `user_named` a boolean and `summary_count` a number, as the
/// runtime answers) and the session directory.
pub(crate) fn get_workspace(ctx: &Ctx<'_>, params: SessionIdParams) -> Result<Value, RpcError> {
    let session = open_session(ctx, params.id())?;
    let dir = ctx.server.config().state_root.session(session.id()).dir;
    let fields = workspace_fields(&dir, session.id())?;
    Ok(json!({"workspace": fields, "path": dir.to_string_lossy()}))
}

/// The session's `workspace.yaml` as the runtime reports it (`user_named` a boolean,
/// `summary_count` a number), `id` the session's when the file has none.
pub(crate) fn workspace_fields(
    dir: &Path,
    id: turnstile_journal::Uuid,
) -> Result<Map<String, Value>, RpcError> {
    let entries = workspace::read_entries(dir).map_err(failed)?;
    let mut fields = Map::new();
    for (key, value) in entries.unwrap_or_default() {
        let value = match key.as_str() {
            "user_named" if value == "true" || value == "false" => json!(value == "true"),
            "summary_count" => value
                .parse::<u64>()
                .map_or_else(|_| json!(value), |n| json!(n)),
            _ => json!(value),
        };
        fields.insert(key, value);
    }
    fields.entry("id").or_insert_with(|| json!(id.to_string()));
    Ok(fields)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_stay_inside_the_folder() {
        assert_eq!(
            relative_path("a/./b/../c.txt").unwrap(),
            Path::new("a/c.txt")
        );
        assert_eq!(relative_path("nested/../x").unwrap(), Path::new("x"));
        for outside in [
            "../escaped.txt",
            "../../escaped.txt",
            "nested/../../../escaped.txt",
            "/etc/passwd",
            "",
            ".",
            "a/..",
        ] {
            let error = relative_path(outside).unwrap_err();
            assert!(
                error.message.contains(OUTSIDE),
                "{outside}: {}",
                error.message
            );
        }
    }
}
