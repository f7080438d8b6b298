//! A session's plan (`session.plan.*`), kept where the Copilot CLI keeps it: `plan.md` in the
//! session's directory. Replaced whole by [`crate::atomic_write`], so a reader never sees half
//! a plan.

use std::io;
use std::path::Path;

/// The plan's file name in the session directory (the Copilot CLI's).
pub const PLAN_FILE: &str = "plan.md";

/// The plan at `path`, `None` when there is none.
pub fn read(path: &Path) -> io::Result<Option<String>> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Replaces the plan at `path` with `content`.
pub fn write(path: &Path, content: &str) -> io::Result<()> {
    crate::atomic_write(path, content.as_bytes())?;
    Ok(())
}

/// Removes the plan at `path` (none is fine).
pub fn delete(path: &Path) -> io::Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plan_round_trips_and_deleting_none_is_fine() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(PLAN_FILE);
        assert_eq!(read(&path).unwrap(), None);
        write(&path, "# one").unwrap();
        write(&path, "# two").unwrap();
        assert_eq!(read(&path).unwrap().as_deref(), Some("# two"));
        delete(&path).unwrap();
        delete(&path).unwrap();
        assert_eq!(read(&path).unwrap(), None);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
