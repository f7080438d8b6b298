//! Location-scoped approvals persisted across sessions: the file
//! (`permissions-config.json`, the Copilot CLI's format) is `turnstile_home::locations`'s;
//! what is added here is which location a working directory is: its git root, else the
//! directory.

use std::path::Path;

pub(crate) use turnstile_home::locations::{LocationStore, StoreError};

/// The location of a working directory: its git root (`repo`), else the directory itself
/// (`dir`), as the runtime resolves it (lexically; the directory need not exist).
pub(crate) fn resolve(dir: &Path) -> (String, &'static str) {
    let dir = crate::permission_state::lexical(dir);
    for ancestor in dir.ancestors() {
        if ancestor.join(".git").exists() {
            return (ancestor.to_string_lossy().into_owned(), "repo");
        }
    }
    (dir.to_string_lossy().into_owned(), "dir")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_git_root_is_the_location() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("repo/.git")).unwrap();
        std::fs::create_dir_all(dir.path().join("repo/sub")).unwrap();
        let (key, kind) = resolve(&dir.path().join("repo/sub"));
        assert_eq!(
            (key.as_str(), kind),
            (dir.path().join("repo").to_str().unwrap(), "repo")
        );
        let (key, kind) = resolve(&dir.path().join("plain/../plain2"));
        assert_eq!(
            (key.as_str(), kind),
            (dir.path().join("plain2").to_str().unwrap(), "dir")
        );
    }
}
