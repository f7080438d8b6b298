//! Copying a fixture's working-dir contents to where a replay runs.

use std::fs;
use std::path::Path;

use crate::error::FixtureError;

/// Copies the tree `from` into `to` (created if missing): files with their permission bits,
/// directories, and symlinks as symlinks. Existing files of the same name are overwritten.
pub fn copy_tree(from: &Path, to: &Path) -> Result<(), FixtureError> {
    fs::create_dir_all(to).map_err(FixtureError::io(to))?;
    let mut entries: Vec<_> = fs::read_dir(from)
        .map_err(FixtureError::io(from))?
        .collect::<Result<_, _>>()
        .map_err(FixtureError::io(from))?;
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let source = entry.path();
        let target = to.join(entry.file_name());
        let kind = entry.file_type().map_err(FixtureError::io(&source))?;
        if kind.is_dir() {
            copy_tree(&source, &target)?;
        } else if kind.is_symlink() {
            let link = fs::read_link(&source).map_err(FixtureError::io(&source))?;
            if fs::symlink_metadata(&target).is_ok() {
                fs::remove_file(&target).map_err(FixtureError::io(&target))?;
            }
            std::os::unix::fs::symlink(&link, &target).map_err(FixtureError::io(&target))?;
        } else {
            fs::copy(&source, &target).map_err(FixtureError::io(&target))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn copies_files_dirs_modes_and_links() {
        let src = tempfile::tempdir().unwrap();
        fs::create_dir_all(src.path().join("a/b")).unwrap();
        fs::write(src.path().join("a/b/f.txt"), "hi").unwrap();
        fs::write(src.path().join("run.sh"), "echo").unwrap();
        fs::set_permissions(src.path().join("run.sh"), fs::Permissions::from_mode(0o755)).unwrap();
        std::os::unix::fs::symlink("a/b/f.txt", src.path().join("link")).unwrap();
        let dst = tempfile::tempdir().unwrap();
        copy_tree(src.path(), &dst.path().join("w")).unwrap();
        let w = dst.path().join("w");
        assert_eq!(fs::read_to_string(w.join("a/b/f.txt")).unwrap(), "hi");
        let mode = fs::metadata(w.join("run.sh")).unwrap().permissions().mode();
        assert_eq!(mode & 0o111, 0o111);
        assert_eq!(
            fs::read_link(w.join("link")).unwrap(),
            Path::new("a/b/f.txt")
        );
    }
}
