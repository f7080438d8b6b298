//! Path rules: globs relative to the session's working directory (or absolute), where `*`
//! and `?` stay within one path component and `**` crosses them.

use std::path::{Component, Path, PathBuf};

use globset::{GlobBuilder, GlobMatcher};

/// A compiled `write(GLOB)` / `read(GLOB)` argument.
#[derive(Debug, Clone)]
pub(crate) struct PathGlob {
    text: String,
    absolute: bool,
    matcher: GlobMatcher,
}

impl PathGlob {
    /// Compiles `text`; a leading `./` is dropped.
    pub(crate) fn new(text: &str) -> Result<Self, String> {
        let text = text.strip_prefix("./").unwrap_or(text);
        let matcher = GlobBuilder::new(text)
            .literal_separator(true)
            .backslash_escape(true)
            .build()
            .map_err(|e| e.kind().to_string())?
            .compile_matcher();
        Ok(PathGlob {
            text: text.to_owned(),
            absolute: text.starts_with('/'),
            matcher,
        })
    }

    /// Whether the glob is absolute (names paths outside the working directory).
    pub(crate) fn is_absolute(&self) -> bool {
        self.absolute
    }

    /// Whether the file at `path` (absolute, or relative to `cwd`) matches.
    pub(crate) fn matches(&self, path: &Path, cwd: &Path) -> bool {
        let full = normalize(&cwd.join(path));
        if self.absolute {
            return self.matcher.is_match(&full);
        }
        match full.strip_prefix(normalize(cwd)) {
            Ok(rel) => self.matcher.is_match(rel),
            // A relative pattern names files under the working directory only.
            Err(_) => false,
        }
    }

    /// The longest leading part of the glob without wildcards, as an absolute path.
    pub(crate) fn literal_root(&self, cwd: &Path) -> PathBuf {
        let literal: PathBuf = Path::new(&self.text)
            .components()
            .take_while(|c| {
                !c.as_os_str()
                    .to_string_lossy()
                    .contains(['*', '?', '[', '{', '\\'])
            })
            .collect();
        normalize(&normalize(cwd).join(literal))
    }

    /// Whether the glob names a whole subtree (`dir/**`) or one literal path.
    pub(crate) fn is_subtree(&self) -> bool {
        let rest = self.text.strip_suffix("/**").unwrap_or(&self.text);
        !rest.contains(['*', '?', '[', '{', '\\'])
    }

    /// Whether a search of the directory `dir` could reach a file this glob matches.
    pub(crate) fn may_match_under(&self, dir: &Path, cwd: &Path) -> bool {
        if self.matches(dir, cwd) {
            return true;
        }
        let dir = normalize(&cwd.join(dir));
        let literal = self.literal_root(cwd);
        literal.starts_with(&dir) || dir.starts_with(&literal)
    }
}

/// The names a path rule must judge a file tool's path by: the path as given, and the same
/// path with every symlink on it resolved (the file it reaches). `linked` is set when the
/// file exists with more than one hard link: its other names are anywhere, so a path deny
/// cannot tell them apart from it. Only `stat`s and `readlink`s; a missing tail is kept as
/// given under its resolved parent.
pub(crate) struct PathNames {
    pub(crate) names: Vec<PathBuf>,
    pub(crate) linked: bool,
}

pub(crate) fn names_of(path: &Path, cwd: &Path) -> PathNames {
    let full = normalize(&cwd.join(path));
    let mut names = vec![full.clone()];
    if let Some(real) = real_path(&full)
        && real != full
    {
        names.push(real);
    }
    let linked = std::fs::metadata(&full)
        .is_ok_and(|m| m.is_file() && std::os::unix::fs::MetadataExt::nlink(&m) > 1);
    PathNames { names, linked }
}

/// The path (absolute) with all symlinks resolved, including dangling ones and components
/// that do not exist yet (a file about to be created): where a write or read of it lands.
/// `None` for a symlink loop. The file tools confine paths by it too.
pub fn real_path(path: &Path) -> Option<PathBuf> {
    real_path_at(path, 0)
}

fn real_path_at(path: &Path, depth: u32) -> Option<PathBuf> {
    // Linux gives up on symlink chains at 40 too.
    if depth > 40 {
        return None;
    }
    if let Ok(real) = std::fs::canonicalize(path) {
        return Some(real);
    }
    let parent = path.parent()?;
    let name = path.file_name()?;
    // Climbing to the parent is not a symlink hop: it does not count towards the limit.
    let real_parent = real_path_at(parent, depth)?;
    let candidate = real_parent.join(name);
    match std::fs::symlink_metadata(&candidate) {
        // A dangling symlink: writing through it would land at its target, so judge the target.
        Ok(meta) if meta.file_type().is_symlink() => {
            let target = std::fs::read_link(&candidate).ok()?;
            real_path_at(&normalize(&real_parent.join(target)), depth + 1)
        }
        // Missing (or unreadable): nothing below can redirect it.
        _ => Some(candidate),
    }
}

/// `path` with `.` and `..` resolved without touching the file system (symlinks are
/// [`real_path`]'s).
pub(crate) fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// `path` relative to `cwd` when it is inside, else absolute (for suggestions).
pub(crate) fn display_relative(path: &Path, cwd: &Path) -> String {
    let full = normalize(&cwd.join(path));
    match full.strip_prefix(normalize(cwd)) {
        Ok(rel) => rel.display().to_string(),
        Err(_) => full.display().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_globs_do_not_cross_slashes() {
        let cwd = Path::new("/w");
        let g = PathGlob::new("*.txt").unwrap();
        assert!(g.matches(Path::new("/w/a.txt"), cwd));
        assert!(!g.matches(Path::new("/w/src/x.txt"), cwd));
        let g = PathGlob::new("src/**").unwrap();
        assert!(g.matches(Path::new("/w/src/a/b.rs"), cwd));
        assert!(g.matches(Path::new("src/a.rs"), cwd));
        assert!(g.matches(Path::new("/w/x/../src/a.rs"), cwd));
        assert!(!g.matches(Path::new("/other/src/a.rs"), cwd));
        let g = PathGlob::new("/etc/**").unwrap();
        assert!(g.matches(Path::new("/etc/passwd"), cwd));
        assert!(g.matches(Path::new("../etc/passwd"), cwd));
        let g = PathGlob::new("secret/**").unwrap();
        assert!(g.may_match_under(Path::new("."), cwd));
        assert!(g.may_match_under(Path::new("secret/a"), cwd));
        assert!(!g.may_match_under(Path::new("src"), cwd));
    }
}
