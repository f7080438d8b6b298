//! `session.workspaces.listCheckpoints` and `readCheckpoint`: the compaction checkpoints the
//! Copilot CLI keeps in `checkpoints/` of a session directory, listed by its `index.md` (a
//! table `| # | Title | File |`, oldest first) and read back by number. This engine records
//! its compactions in the journal (`session.compaction_complete`) and writes no checkpoint
//! files, so its own sessions list none; a session directory the CLI wrote (one resumed here)
//! lists and reads the CLI's. Nothing is changed, so nothing is recorded.
//!
//! A checkpoint's file name comes from `index.md`, a file in the session directory anyone
//! with access could edit: only a plain name inside `checkpoints/` is read, never through a
//! link.

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Value, json};
use turnstile_home::workspace::SESSION_FOLDERS;

use super::session_id_params::SessionIdParams;
use super::{Ctx, open_session};
use crate::rpc::{RpcError, codes};

/// The checkpoints' folder in a session directory (the CLI's `checkpoints/`).
const CHECKPOINTS_DIR: &str = SESSION_FOLDERS[0];

/// The index the CLI keeps of its checkpoints.
const INDEX_FILE: &str = "index.md";

/// The most bytes read of `index.md` or of one checkpoint (a larger one is refused: the
/// answer is one JSON-RPC frame held in memory whole).
pub(crate) const MAX_CHECKPOINT_BYTES: u64 = 8 * 1024 * 1024;

/// One checkpoint as the index lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Checkpoint {
    number: u64,
    title: String,
    filename: String,
}

fn failed(what: impl std::fmt::Display) -> RpcError {
    RpcError::new(codes::SESSION_FAILED, what.to_string())
}

fn checkpoints_dir(ctx: &Ctx<'_>, id: &str) -> Result<PathBuf, RpcError> {
    let session = open_session(ctx, id)?;
    Ok(ctx
        .server
        .config()
        .state_root
        .session(session.id())
        .dir
        .join(CHECKPOINTS_DIR))
}

/// A file of `dir` read whole without following a link: `None` when it is not there.
fn read_plain(dir: &Path, name: &str) -> Result<Option<String>, RpcError> {
    if std::fs::symlink_metadata(dir).is_ok_and(|meta| meta.file_type().is_symlink()) {
        return Ok(None);
    }
    let path = dir.join(name);
    let file = match std::fs::File::options()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&path)
    {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        // A link in the file's place: not a checkpoint of this session.
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => return Ok(None),
        Err(e) => return Err(failed(format!("{}: {e}", path.display()))),
    };
    let mut bytes = Vec::new();
    file.take(MAX_CHECKPOINT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| failed(format!("{}: {e}", path.display())))?;
    if bytes.len() as u64 > MAX_CHECKPOINT_BYTES {
        return Err(failed(format!(
            "{} is larger than {MAX_CHECKPOINT_BYTES} bytes",
            path.display()
        )));
    }
    Ok(Some(String::from_utf8_lossy(&bytes).into_owned()))
}

/// The rows of the index's table whose number and file name are well formed, in order.
fn parse_index(text: &str) -> Vec<Checkpoint> {
    text.lines()
        .filter_map(|line| {
            let cells: Vec<&str> = line
                .trim()
                .strip_prefix('|')?
                .strip_suffix('|')?
                .split('|')
                .collect();
            let [number, title, filename] = cells.as_slice() else {
                return None;
            };
            let number = number.trim().parse::<u64>().ok()?;
            let filename = filename.trim();
            let plain = !filename.is_empty()
                && !filename.contains('/')
                && filename != "."
                && filename != ".."
                && filename != INDEX_FILE;
            plain.then(|| Checkpoint {
                number,
                title: title.trim().to_owned(),
                filename: filename.to_owned(),
            })
        })
        .collect()
}

fn index(dir: &Path) -> Result<Vec<Checkpoint>, RpcError> {
    Ok(read_plain(dir, INDEX_FILE)?
        .as_deref()
        .map(parse_index)
        .unwrap_or_default())
}

/// `session.workspaces.listCheckpoints`: `{checkpoints: [{number, title, filename}]}`.
pub(crate) fn list(ctx: &Ctx<'_>, params: SessionIdParams) -> Result<Value, RpcError> {
    let dir = checkpoints_dir(ctx, params.id())?;
    let checkpoints: Vec<Value> = index(&dir)?
        .into_iter()
        .map(|c| json!({"number": c.number, "title": c.title, "filename": c.filename}))
        .collect();
    Ok(json!({ "checkpoints": checkpoints }))
}

/// `session.workspaces.readCheckpoint` params: the checkpoint's number (the runtime's numbers
/// are unsigned integers; another value is refused).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ReadParams {
    session_id: String,
    number: u64,
}

/// `session.workspaces.readCheckpoint`: `{content}`, `null` when there is no such checkpoint.
pub(crate) fn read(ctx: &Ctx<'_>, params: ReadParams) -> Result<Value, RpcError> {
    let dir = checkpoints_dir(ctx, &params.session_id)?;
    let content = match index(&dir)?.into_iter().find(|c| c.number == params.number) {
        Some(checkpoint) => read_plain(&dir, &checkpoint.filename)?,
        None => None,
    };
    Ok(json!({ "content": content }))
}

#[cfg(test)]
mod tests {
    use super::*;

    const INDEX: &str = "# Checkpoint History\n\nCheckpoints are listed in chronological order. Checkpoint 1 is the oldest, higher numbers are more recent.\n\n| # | Title | File |\n|---|-------|------|\n| 1 | Set up the parser | 001-set-up-the-parser.md |\n| 2 | Escape | ../secret.md |\n| 3 | Tests pass | 003-tests-pass.md |\n";

    #[test]
    fn the_index_lists_rows_with_plain_file_names() {
        let rows = parse_index(INDEX);
        assert_eq!(
            rows,
            [
                Checkpoint {
                    number: 1,
                    title: "Set up the parser".into(),
                    filename: "001-set-up-the-parser.md".into()
                },
                Checkpoint {
                    number: 3,
                    title: "Tests pass".into(),
                    filename: "003-tests-pass.md".into()
                },
            ]
        );
        assert!(
            parse_index("# Checkpoint History\n\n| # | Title | File |\n|---|-------|------|\n")
                .is_empty()
        );
    }

    #[test]
    fn a_checkpoint_is_read_by_its_number_and_never_through_a_link() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(INDEX_FILE), INDEX).unwrap();
        std::fs::write(dir.path().join("001-set-up-the-parser.md"), "summary one").unwrap();
        let found = index(dir.path()).unwrap();
        assert_eq!(
            read_plain(dir.path(), &found[0].filename)
                .unwrap()
                .as_deref(),
            Some("summary one")
        );
        // Listed but missing: no content.
        assert_eq!(read_plain(dir.path(), &found[1].filename).unwrap(), None);
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("x.md"), "not the session's").unwrap();
        std::os::unix::fs::symlink(
            outside.path().join("x.md"),
            dir.path().join("003-tests-pass.md"),
        )
        .unwrap();
        assert_eq!(read_plain(dir.path(), "003-tests-pass.md").unwrap(), None);
    }
}
