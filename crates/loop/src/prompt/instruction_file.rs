//! One instructions file read for the system prompt: a bounded read, its text cut with a
//! note past the bound (the repository's files and the instruction directories' alike).

use std::io::Read;
use std::path::{Path, PathBuf};

/// Bytes read at most from one repository instructions file; the rest is cut with a note.
pub const MAX_INSTRUCTIONS_BYTES: u64 = 64 * 1024;

/// One repository instructions file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CustomInstructions {
    /// Where it was read from.
    pub path: PathBuf,
    /// Its text (cut at [`MAX_INSTRUCTIONS_BYTES`]).
    pub text: String,
}

/// The file at `path`, cut at [`MAX_INSTRUCTIONS_BYTES`]; `None` when it is missing, not a
/// regular file, unreadable (logged) or empty.
pub(super) fn read_instructions(path: &Path) -> Option<CustomInstructions> {
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "instructions file not read");
            return None;
        }
    };
    if !file.metadata().is_ok_and(|m| m.is_file()) {
        return None;
    }
    let mut bytes = Vec::new();
    if let Err(e) = file
        .take(MAX_INSTRUCTIONS_BYTES + 1)
        .read_to_end(&mut bytes)
    {
        tracing::warn!(path = %path.display(), error = %e, "instructions file not read");
        return None;
    }
    let cut = bytes.len() as u64 > MAX_INSTRUCTIONS_BYTES;
    bytes.truncate(MAX_INSTRUCTIONS_BYTES as usize);
    let mut text = String::from_utf8_lossy(&bytes).trim_end().to_owned();
    if cut {
        text.push_str(&format!(
            "\n[cut: the file is longer than {MAX_INSTRUCTIONS_BYTES} bytes]"
        ));
    }
    (!text.trim().is_empty()).then(|| CustomInstructions {
        path: path.to_path_buf(),
        text,
    })
}
