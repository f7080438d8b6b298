//! git's global options (before the subcommand) that make it run a program named by text:
//! configuration given on the command line (`-c alias.x='!cmd'`, `core.fsmonitor`,
//! `core.pager`, `include.path`, ...), configuration taken from the environment
//! (`--config-env`), or a directory of git's own programs (`--exec-path=DIR`). Such a line is
//! unresolved: a narrow `shell(git)` rule does not approve it and a deny rule denies it.
//! `-C DIR`, `--git-dir` and `--work-tree` are left alone: the repository's own configuration
//! is as much in reach as another directory's (see docs/security.md).

use crate::shell::{Analysis, Word};

/// Configuration keys (lower-cased) that `-c` may set without running anything.
const SAFE_KEYS: &[&str] = &[
    "user.name",
    "user.email",
    "core.quotepath",
    "core.autocrlf",
    "core.safecrlf",
    "core.filemode",
    "init.defaultbranch",
    "commit.gpgsign",
    "tag.gpgsign",
    "log.date",
    "log.decorate",
    "pull.rebase",
    "pull.ff",
    "merge.ff",
    "push.default",
    "column.ui",
    "diff.renames",
    "status.short",
    "status.branch",
    "gc.auto",
    "maintenance.auto",
    "fetch.prune",
    "rebase.autostash",
    "protocol.version",
];

/// Sections (lower-cased) whose keys are all colours or booleans about messages.
const SAFE_SECTIONS: &[&str] = &["color.", "advice."];

/// Global options that take the next word as their value.
const WITH_ARG: &[&str] = &[
    "-C",
    "--git-dir",
    "--work-tree",
    "--namespace",
    "--super-prefix",
    "--attr-source",
];

impl Analysis {
    pub(super) fn git(&mut self, args: &[Word]) {
        let mut i = 0;
        while let Some(a) = args.get(i) {
            let v = a.value.as_str();
            if a.brace && !a.dynamic && !a.glob && !v.contains('-') {
                // `git {status,log}`: no word it becomes can be an option.
                return;
            }
            if !a.is_static() {
                // `git $OPTS status`, `git {-c,alias.x=..} x`, `git *` (a file named `-c`):
                // the words may be options once expanded.
                self.note("a git option or subcommand computed at run time");
                return;
            }
            if !v.starts_with('-') {
                // The subcommand: its own options are its business.
                return;
            }
            match v {
                "-c" => {
                    match args.get(i + 1) {
                        Some(setting) if setting.is_static() && safe_setting(&setting.value) => {}
                        _ => {
                            self.note("`git -c` (configuration can make git run commands)");
                            return;
                        }
                    }
                    i += 2;
                }
                _ if v == "--config-env" || v.starts_with("--config-env=") => {
                    self.note("`git --config-env` (configuration can make git run commands)");
                    return;
                }
                _ if v.starts_with("--exec-path=") => {
                    self.note("`git --exec-path=DIR` (git runs its programs from DIR)");
                    return;
                }
                _ if WITH_ARG.contains(&v) => i += 2,
                // `-cKEY=V` is refused by git; anything else starting with `-c` is not an
                // option git knows either.
                _ if v.starts_with("-c") => {
                    self.note("`git -c` (configuration can make git run commands)");
                    return;
                }
                _ => i += 1,
            }
        }
    }
}

/// Whether `KEY[=VALUE]` sets a key on the safe list.
fn safe_setting(setting: &str) -> bool {
    let key = setting
        .split_once('=')
        .map_or(setting, |(k, _)| k)
        .to_ascii_lowercase();
    SAFE_KEYS.contains(&key.as_str())
        || SAFE_SECTIONS
            .iter()
            .any(|s| key.strip_prefix(s).is_some_and(|rest| !rest.is_empty()))
}
