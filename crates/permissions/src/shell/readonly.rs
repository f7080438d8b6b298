//! Which commands are known to have no side effects (the permission request's `readOnly`).

/// Commands with no side effects whatever their arguments. Kept short on
/// purpose: `find` (-delete), `sed` (-i), `sort` (-o), `env`/`xargs` (run
/// other commands) are not here.
const READ_ONLY: &[&str] = &[
    "cat", "ls", "pwd", "echo", "printf", "head", "tail", "wc", "grep", "egrep", "fgrep", "rg",
    "which", "whoami", "date", "stat", "file", "du", "df", "uname", "true", "false", "test", "[",
    "tree", "basename", "dirname", "realpath", "readlink", "diff", "cmp", "id", "hostname",
];

/// Git subcommands that only read.
const GIT_READ_ONLY: &[&str] = &[
    "status",
    "log",
    "diff",
    "show",
    "rev-parse",
    "ls-files",
    "blame",
    "grep",
    "describe",
    "shortlog",
];

pub(crate) fn is_read_only(identifier: &str, args: &[&str]) -> bool {
    if identifier == "git" {
        // Skip global options (`-C dir`, `--no-pager`) to find the subcommand.
        let mut iter = args.iter();
        while let Some(arg) = iter.next() {
            if *arg == "-C" || *arg == "-c" {
                iter.next();
                continue;
            }
            if arg.starts_with('-') {
                continue;
            }
            return GIT_READ_ONLY.contains(arg);
        }
        return false;
    }
    READ_ONLY.contains(&identifier)
}
