//! What the rules say about effects, for the sandbox that enforces them (`turnstile-sandbox`):
//! which files a tool's processes may write or read, which programs they may execute, and
//! whether they may reach the network. The rules' command-line reading decides approvals; this
//! is the part of the same rules the kernel can hold whatever the command line looked like.

use std::path::{Path, PathBuf};

use crate::PermissionPolicy;
use crate::paths::PathGlob;
use crate::pattern::{Family, PatternArg, ToolPattern};

/// Which programs the rules let a shell command execute.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Programs {
    /// Any program but these (the single-word `shell(PROG)` deny rules), by name.
    AllBut(Vec<String>),
    /// Only these programs (the first words of the narrow `shell(...)` allow rules), by name.
    Only(Vec<String>),
}

/// The effects the rules allow a tool's processes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Effects {
    /// Roots outside the working directory that `write(/ABS/…)` allow rules open.
    pub extra_writable: Vec<PathBuf>,
    /// Paths that `write(GLOB)` deny rules name: existing subtrees or files, resolved now.
    pub unwritable: Vec<PathBuf>,
    /// Paths that `read(GLOB)` (and `view`/`grep`/`glob`) deny rules name, resolved now.
    pub unreadable: Vec<PathBuf>,
    /// The programs a shell command may execute.
    pub programs: Programs,
    /// Whether shell commands may reach the network.
    pub network: bool,
}

/// At most this many files a wildcard glob is expanded to (the walk stops there; the rest of
/// the rule is held by the approval step only, and the sandbox says so).
pub const MAX_EXPANDED: usize = 10_000;

impl PermissionPolicy {
    /// The effects these rules allow in `cwd`. `can_ask`: a client approves calls no rule
    /// decides, so the broad defaults apply (any program, the network) and the per-call
    /// approval narrows them.
    pub fn effects(&self, cwd: &Path, can_ask: bool) -> Effects {
        let shell_allows: Vec<&ToolPattern> = self
            .allow
            .iter()
            .filter(|p| p.family == Family::Shell)
            .collect();
        let broad_shell = self.allow_all || can_ask || shell_allows.iter().any(|p| p.arg.is_none());
        let first_words = |patterns: &mut dyn Iterator<Item = &ToolPattern>, single: bool| {
            let mut names: Vec<String> = patterns
                .filter(|p| p.family == Family::Shell)
                .filter_map(|p| match &p.arg {
                    Some(PatternArg::Words(w)) if !single || w.len() == 1 => w.first().cloned(),
                    _ => None,
                })
                .collect();
            names.sort();
            names.dedup();
            names
        };
        let programs = if broad_shell {
            Programs::AllBut(first_words(&mut self.deny.iter(), true))
        } else {
            Programs::Only(first_words(&mut shell_allows.into_iter(), false))
        };
        let url_allowed = |rules: &[ToolPattern]| {
            rules
                .iter()
                .any(|p| p.family == Family::Url && p.arg.is_none())
        };
        let url_denied = self.deny.iter().any(|p| p.family == Family::Url);
        Effects {
            extra_writable: globs(&self.allow, Family::Write)
                .into_iter()
                .filter(|g| g.is_absolute())
                .map(|g| g.literal_root(cwd))
                .collect(),
            unwritable: expand(&globs(&self.deny, Family::Write), cwd),
            unreadable: expand(&globs(&self.deny, Family::Read), cwd),
            programs,
            // The kernel filters connections by port, not by host: a `url(HOST)` deny can be
            // held for shell commands only by giving them no network at all.
            network: !url_denied && (self.allow_all || can_ask || url_allowed(&self.allow)),
        }
    }
}

/// The path globs of the `family` rules among `rules`.
fn globs(rules: &[ToolPattern], family: Family) -> Vec<&PathGlob> {
    rules
        .iter()
        .filter(|p| p.family == family)
        .filter_map(|p| match &p.arg {
            Some(PatternArg::Path(g)) => Some(g),
            _ => None,
        })
        .collect()
}

/// The existing paths the globs name: a glob that is a literal path or ends in `/**` names
/// its literal part (the whole subtree, including files made later); any other is expanded
/// over what exists now, at most [`MAX_EXPANDED`] files.
fn expand(globs: &[&PathGlob], cwd: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for glob in globs {
        let root = glob.literal_root(cwd);
        if glob.is_subtree() {
            out.push(root);
            continue;
        }
        let mut seen = 0usize;
        let mut stack = vec![root];
        while let Some(dir) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                seen += 1;
                if seen > MAX_EXPANDED {
                    break;
                }
                let path = entry.path();
                if glob.matches(&path, cwd) {
                    out.push(path);
                } else if entry
                    .file_type()
                    .is_ok_and(|t| t.is_dir() && !t.is_symlink())
                {
                    stack.push(path);
                }
            }
        }
    }
    out.sort();
    out.dedup();
    out
}
