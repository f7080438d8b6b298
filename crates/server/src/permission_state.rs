//! What `session.permissions.*` changes on one open session: the loop's live rules (shared
//! with the engine, which decides every request with them), the directories the session's
//! path policy allows, and which location's persisted approvals were applied.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use turnstile_permissions::{LiveRules, PermissionRule, RuleScope};

/// One session's permission state.
#[derive(Debug)]
pub(crate) struct SessionPermissions {
    /// The rules the engine consults on each request.
    pub live: Arc<LiveRules>,
    /// The workspace root (`session.permissions.paths.isPathWithinWorkspace`): the session's
    /// own directory until `configure` names a `paths.workspacePath`.
    workspace: Mutex<PathBuf>,
    dirs: Mutex<Dirs>,
    applied: Mutex<Applied>,
}

/// What `locations.apply` applied last: the location and its rules.
#[derive(Debug, Default)]
struct Applied {
    key: Option<String>,
    rules: Vec<PermissionRule>,
}

/// What one `locations.apply` did.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct ApplyOutcome {
    /// Another location than the last one applied, or rules that one did not have.
    pub changed: bool,
    /// How many of the rules the last apply had not applied.
    pub newly_applied: usize,
}

#[derive(Debug, Clone)]
struct Dirs {
    primary: PathBuf,
    extra: Vec<PathBuf>,
}

/// Directories a session's path policy lists at most: a client cannot grow the server
/// without bound.
pub(crate) const MAX_DIRECTORIES: usize = 1024;

impl SessionPermissions {
    /// The state of a session working in `cwd` (the primary directory) with the server's
    /// `--add-dir` directories, its directory `workspace`, and the engine's live rules.
    pub(crate) fn new(
        live: Arc<LiveRules>,
        cwd: &Path,
        additional: &[PathBuf],
        workspace: PathBuf,
    ) -> Self {
        SessionPermissions {
            live,
            workspace: Mutex::new(workspace),
            dirs: Mutex::new(Dirs {
                primary: cwd.to_path_buf(),
                extra: additional.to_vec(),
            }),
            applied: Mutex::new(Applied::default()),
        }
    }

    /// The primary directory, then the others, in the order they were added.
    pub(crate) fn directories(&self) -> (PathBuf, Vec<PathBuf>) {
        let dirs = lock(&self.dirs);
        let mut all = vec![dirs.primary.clone()];
        all.extend(dirs.extra.iter().filter(|d| **d != dirs.primary).cloned());
        (dirs.primary.clone(), all)
    }

    /// Adds a directory (a known one is not repeated); false when the list is full.
    pub(crate) fn add_directory(&self, dir: PathBuf) -> bool {
        let mut dirs = lock(&self.dirs);
        if dirs.primary == dir || dirs.extra.contains(&dir) {
            return true;
        }
        if dirs.extra.len() >= MAX_DIRECTORIES {
            return false;
        }
        dirs.extra.push(dir);
        true
    }

    /// Replaces the additional directories (`configure.paths`).
    pub(crate) fn set_directories(&self, extra: Vec<PathBuf>) {
        let mut extra = extra;
        extra.truncate(MAX_DIRECTORIES);
        lock(&self.dirs).extra = extra;
    }

    /// Makes `dir` the primary directory; the old primary is no longer listed.
    pub(crate) fn set_primary(&self, dir: PathBuf) {
        let mut dirs = lock(&self.dirs);
        dirs.extra.retain(|d| *d != dir);
        dirs.primary = dir;
    }

    /// The workspace root.
    pub(crate) fn workspace(&self) -> PathBuf {
        lock(&self.workspace).clone()
    }

    /// Replaces the workspace root (`configure.paths.workspacePath`).
    pub(crate) fn set_workspace(&self, dir: PathBuf) {
        *lock(&self.workspace) = dir;
    }

    /// Whether `path` (absolute) is inside one of the directories.
    pub(crate) fn is_allowed(&self, path: &Path) -> bool {
        let (_, all) = self.directories();
        is_absolute_inside(path, &all)
    }

    /// Applies `rules`, the approvals persisted for location `key`, to the live location
    /// rules: those of another location applied before leave them. Counts as new what the
    /// last apply (since [`Self::forget_applied`]) did not apply, as the Copilot CLI does:
    /// rules a session got when it opened still count once.
    pub(crate) fn apply_location(&self, key: &str, rules: Vec<PermissionRule>) -> ApplyOutcome {
        let mut applied = lock(&self.applied);
        let switched = applied.key.as_deref().is_some_and(|k| k != key);
        if switched {
            self.live.clear(RuleScope::Location);
        }
        let newly_applied = if switched {
            rules.len()
        } else {
            rules.iter().filter(|r| !applied.rules.contains(r)).count()
        };
        let changed = applied.key.as_deref() != Some(key) || newly_applied > 0;
        self.live.add(RuleScope::Location, &rules);
        applied.key = Some(key.to_owned());
        applied.rules = rules;
        ApplyOutcome {
            changed,
            newly_applied,
        }
    }

    /// Forgets what was applied (the live location rules were emptied).
    pub(crate) fn forget_applied(&self) {
        lock(&self.applied).rules.clear();
    }
}

/// Whether the absolute `path` lies inside (or is) one of `dirs`, compared component-wise
/// after resolving `.` and `..` (so `/a/b/../../etc` is not inside `/a`, and `/ab` is not
/// inside `/a`). A relative path is inside nothing.
pub(crate) fn is_absolute_inside(path: &Path, dirs: &[PathBuf]) -> bool {
    if !path.is_absolute() {
        return false;
    }
    let path = lexical(path);
    dirs.iter().any(|d| path.starts_with(lexical(d)))
}

/// `path` with `.` and `..` resolved without the file system, as the file tools do.
pub(crate) fn lexical(path: &Path) -> PathBuf {
    turnstile_tools::paths::normalize(path)
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state() -> SessionPermissions {
        SessionPermissions::new(
            Arc::default(),
            Path::new("/w/project"),
            &[PathBuf::from("/w/extra")],
            PathBuf::from("/h/session-state/x"),
        )
    }

    #[test]
    fn containment_is_by_component_after_dot_dot() {
        let s = state();
        assert!(s.is_allowed(Path::new("/w/project/a/b.txt")));
        assert!(s.is_allowed(Path::new("/w/project")));
        assert!(s.is_allowed(Path::new("/w/extra/x")));
        assert!(!s.is_allowed(Path::new("/w/project-evil/x")));
        assert!(!s.is_allowed(Path::new("/w/project/../../etc/passwd")));
        assert!(!s.is_allowed(Path::new("project/a")));
        assert!(!s.is_allowed(Path::new("/etc/passwd")));
    }

    #[test]
    fn primary_changes_and_directories_are_bounded() {
        let s = state();
        assert!(s.add_directory(PathBuf::from("/w/extra")));
        s.set_primary(PathBuf::from("/w/extra"));
        let (primary, all) = s.directories();
        assert_eq!(primary, PathBuf::from("/w/extra"));
        assert_eq!(all, vec![PathBuf::from("/w/extra")]);
        for i in 0..MAX_DIRECTORIES {
            assert!(s.add_directory(PathBuf::from(format!("/d/{i}"))));
        }
        assert!(!s.add_directory(PathBuf::from("/d/one-too-many")));
    }

    #[test]
    fn a_location_counts_as_changed_once_and_another_replaces_it() {
        let s = state();
        let ls = PermissionRule::new("shell", Some("ls"));
        let pwd = PermissionRule::new("shell", Some("pwd"));
        // Rules a session got when it opened still count on the first apply.
        s.live.add(RuleScope::Location, std::slice::from_ref(&ls));
        let first = s.apply_location("/w/project", vec![ls.clone()]);
        assert_eq!(
            first,
            ApplyOutcome {
                changed: true,
                newly_applied: 1
            }
        );
        let again = s.apply_location("/w/project", vec![ls.clone()]);
        assert_eq!(
            again,
            ApplyOutcome {
                changed: false,
                newly_applied: 0
            }
        );
        s.live.clear(RuleScope::Location);
        s.forget_applied();
        let after_clear = s.apply_location("/w/project", vec![ls.clone()]);
        assert_eq!(
            after_clear,
            ApplyOutcome {
                changed: true,
                newly_applied: 1
            }
        );
        let other = s.apply_location("/w/other", vec![pwd.clone()]);
        assert_eq!(
            other,
            ApplyOutcome {
                changed: true,
                newly_applied: 1
            }
        );
        assert_eq!(s.live.rules(RuleScope::Location), vec![pwd]);
    }
}
