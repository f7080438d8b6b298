//! `session.workspaces.saveLargePaste`: a paste too large for the prompt kept as a workspace
//! file, where the Copilot CLI keeps it: `files/paste-<epoch ms>.txt` in the session
//! directory, so the prompt can name the file and `readFile` reads it back. The file is the
//! record (the runtime announces no event for it), kept beside the journal like every
//! workspace file, so a resume and a fork find it.
//!
//! The file is made new (`O_EXCL`, mode 0600, never through a link); a name taken in the same
//! millisecond moves on to the next one. Its size is bounded by the request's, one JSON-RPC
//! frame.

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Deserialize;
use serde_json::{Value, json};

use super::Ctx;
use super::workspaces::{failed, files_dir};
use crate::rpc::RpcError;

/// How many following milliseconds are tried when a paste's name is taken.
const NAME_ATTEMPTS: u64 = 1000;

/// `session.workspaces.saveLargePaste` params.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PasteParams {
    session_id: String,
    content: String,
}

/// `session.workspaces.saveLargePaste`: `{saved: {filePath, filename, sizeBytes}}`.
pub(crate) fn save(ctx: &Ctx<'_>, params: PasteParams) -> Result<Value, RpcError> {
    let (_, dir) = files_dir(ctx, &params.session_id)?;
    match std::fs::symlink_metadata(&dir) {
        Ok(meta) if meta.is_dir() => {}
        Ok(_) => {
            return Err(failed(format!("{} is not a folder", dir.display())));
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::DirBuilder::new()
                .mode(0o700)
                .create(&dir)
                .map_err(|e| failed(format!("{}: {e}", dir.display())))?;
        }
        Err(e) => return Err(failed(format!("{}: {e}", dir.display()))),
    }
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    for ms in now..now.saturating_add(NAME_ATTEMPTS) {
        let filename = format!("paste-{ms}.txt");
        let path = dir.join(&filename);
        let mut file = match std::fs::File::options()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&path)
        {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(failed(format!("{}: {e}", path.display()))),
        };
        let written = file
            .write_all(params.content.as_bytes())
            .and_then(|()| file.sync_all());
        if let Err(e) = written {
            // Half a paste is no paste: the name is freed for nothing to read it wrongly.
            let _ = std::fs::remove_file(&path);
            return Err(failed(format!("{}: {e}", path.display())));
        }
        return Ok(json!({"saved": {
            "filePath": path.to_string_lossy(),
            "filename": filename,
            "sizeBytes": params.content.len(),
        }}));
    }
    Err(failed(format!(
        "no free paste name in {} for {NAME_ATTEMPTS} milliseconds from {now}",
        dir.display()
    )))
}
