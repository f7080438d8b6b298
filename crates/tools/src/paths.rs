//! Path rules of the file tools: relative paths resolve against the session's
//! working directory, and a path that leaves it (by `..`, by being absolute
//! elsewhere, or through a symlink) is refused unless the session allows it.

use std::fs;
use std::path::{Component, Path, PathBuf};

use turnstile_permissions::real_path;

use super::{ToolContext, ToolFailure};

/// Resolves a path argument to an absolute, lexically normalised path and
/// checks that it stays inside `ctx.cwd` (unless `ctx.allow_outside_cwd`).
///
/// The returned path is the one the tool must operate on and show: the check
/// is made on exactly that path (with its symlinks resolved), so what is
/// checked is what is touched.
pub fn resolve(raw: &str, ctx: &ToolContext) -> Result<PathBuf, ToolFailure> {
    if raw.trim().is_empty() {
        return Err(ToolFailure::invalid("The path must not be empty."));
    }
    let base = working_dir(ctx);
    let path = normalize(&base.join(raw));
    if !ctx.allow_outside_cwd && !is_inside(&path, &base) {
        return Err(ToolFailure::new(
            format!(
                "Path {} is outside the working directory {}. File tools may only access paths inside the working directory.",
                path.display(),
                base.display()
            ),
            "outside_cwd",
        ));
    }
    Ok(path)
}

/// [`resolve`] for a tool that writes: also refuses the engine's own files (the state
/// directory, `$COPILOT_HOME`), which no tool may write, whatever the rules and
/// `--allow-outside-cwd` say (a settings file written there would be trusted by the next run).
pub fn resolve_for_write(raw: &str, ctx: &ToolContext) -> Result<PathBuf, ToolFailure> {
    let path = resolve(raw, ctx)?;
    // A path that cannot be resolved (a symlink loop) cannot be shown to be elsewhere.
    let real = real_path(&path).unwrap_or_else(|| PathBuf::from("/"));
    for dir in ctx.engine_dirs.iter() {
        let dir = fs::canonicalize(dir).unwrap_or_else(|_| dir.clone());
        if real.starts_with(&dir) || real == Path::new("/") {
            return Err(ToolFailure::new(
                format!(
                    "Path {} is in {}, which holds the engine's own state: no tool may write there.",
                    path.display(),
                    dir.display()
                ),
                "engine_files",
            ));
        }
    }
    Ok(path)
}

/// The working directory as an absolute, lexically normalised path.
pub fn working_dir(ctx: &ToolContext) -> PathBuf {
    // A relative cwd would make every later join ambiguous; anchor it to the
    // process's directory once.
    let abs = std::path::absolute(&ctx.cwd).unwrap_or_else(|_| ctx.cwd.clone());
    normalize(&abs)
}

/// Removes `.` and resolves `..` textually (never climbing above the root).
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                // `pop` refuses to remove the root, which is what `/..` means.
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// Whether `path`, with every symlink on it resolved, lies inside `base` (also resolved).
fn is_inside(path: &Path, base: &Path) -> bool {
    let real_base = fs::canonicalize(base).unwrap_or_else(|_| base.to_path_buf());
    match real_path(path) {
        Some(real) => real.starts_with(&real_base),
        // A path we cannot resolve (a symlink loop) cannot be shown to be inside.
        None => false,
    }
}

/// `path` as a `./`-prefixed path relative to `base` when inside it, else absolute
/// (the form `glob` shows).
pub fn display_relative(path: &Path, base: &Path) -> String {
    match path.strip_prefix(base) {
        Ok(rel) if rel.as_os_str().is_empty() => ".".to_owned(),
        Ok(rel) => format!("./{}", rel.display()),
        Err(_) => path.display().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(dir: &Path) -> ToolContext {
        ToolContext::new(dir)
    }

    #[test]
    fn relative_paths_resolve_against_cwd() {
        let dir = tempfile::tempdir().unwrap();
        let c = ctx(dir.path());
        let p = resolve("a/./b/../c.txt", &c).unwrap();
        assert_eq!(p, normalize(&dir.path().join("a/c.txt")));
        assert!(p.is_absolute());
    }

    #[test]
    fn dotdot_escape_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let c = ctx(&dir.path().join("inner"));
        std::fs::create_dir(dir.path().join("inner")).unwrap();
        let err = resolve("../x", &c).unwrap_err();
        assert_eq!(err.code.as_deref(), Some("outside_cwd"));
        assert!(
            err.message
                .contains(&dir.path().join("x").display().to_string())
        );
        assert!(err.message.contains("outside the working directory"));
    }

    #[test]
    fn absolute_outside_is_refused_unless_allowed() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = ctx(dir.path());
        assert!(resolve("/etc/passwd", &c).is_err());
        c.allow_outside_cwd = true;
        assert_eq!(
            resolve("/etc/passwd", &c).unwrap(),
            PathBuf::from("/etc/passwd")
        );
    }

    #[test]
    fn absolute_inside_is_fine() {
        let dir = tempfile::tempdir().unwrap();
        let c = ctx(dir.path());
        let inside = dir.path().join("sub/file");
        assert_eq!(resolve(inside.to_str().unwrap(), &c).unwrap(), inside);
    }

    #[test]
    fn symlink_out_is_refused() {
        let outside = tempfile::tempdir().unwrap();
        let dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("link")).unwrap();
        let c = ctx(dir.path());
        let err = resolve("link/secret.txt", &c).unwrap_err();
        assert_eq!(err.code.as_deref(), Some("outside_cwd"));
    }

    #[test]
    fn dangling_symlink_out_is_refused() {
        let outside = tempfile::tempdir().unwrap();
        let dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path().join("not-yet"), dir.path().join("dangling"))
            .unwrap();
        let c = ctx(dir.path());
        assert!(resolve("dangling", &c).is_err());
    }

    #[test]
    fn symlink_inside_is_fine() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("real")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("real"), dir.path().join("alias")).unwrap();
        let c = ctx(dir.path());
        assert!(resolve("alias/new.txt", &c).is_ok());
    }

    #[test]
    fn cwd_reached_through_a_symlink_still_counts_as_inside() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("real")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("real"), dir.path().join("alias")).unwrap();
        let c = ctx(&dir.path().join("alias"));
        // Spelled through the real directory rather than the alias the session uses.
        let real = dir.path().join("real/file.txt");
        assert!(resolve(real.to_str().unwrap(), &c).is_ok());
    }

    #[test]
    fn empty_path_is_invalid() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            resolve("  ", &ctx(dir.path())).unwrap_err().code.as_deref(),
            Some("invalid_arguments")
        );
    }

    #[test]
    fn relative_display() {
        let base = Path::new("/w");
        assert_eq!(display_relative(Path::new("/w/a/b"), base), "./a/b");
        assert_eq!(display_relative(Path::new("/w"), base), ".");
        assert_eq!(display_relative(Path::new("/x/y"), base), "/x/y");
    }
}
