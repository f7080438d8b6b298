//! bash options set by `set`, `shopt`, or on a `bash` command line. Most only change what
//! commands do when they fail or how globs match; a few change how the rest of the text is
//! read or what a word means, and make the line unresolved: `set -k` (assignments after the
//! command name go into its environment: `git status GIT_DIR=..`), `set -o posix` (`time -f`
//! becomes the `time` program), `shopt -s extglob` (`!(x)` becomes a glob that names the
//! program), the `compat*` levels, ...

use crate::shell::{Analysis, Word};

/// `set`'s one-letter options that leave the reading alone (not `k`).
const SAFE_FLAGS: &str = "abefhmnptuvxBCEHPT";

/// `set -o` names that leave the reading alone (not `keyword`, not `posix`).
const SAFE_SET_NAMES: &[&str] = &[
    "allexport",
    "braceexpand",
    "emacs",
    "errexit",
    "errtrace",
    "functrace",
    "hashall",
    "histexpand",
    "history",
    "ignoreeof",
    "interactive-comments",
    "monitor",
    "noclobber",
    "noexec",
    "noglob",
    "nolog",
    "notify",
    "nounset",
    "onecmd",
    "physical",
    "pipefail",
    "privileged",
    "verbose",
    "vi",
    "xtrace",
];

/// `shopt` names that leave the reading alone (not `extglob`, `extquote`, `compat*`,
/// `extdebug`, `noexpand_translation`, ...).
const SAFE_SHOPT_NAMES: &[&str] = &[
    "autocd",
    "cdable_vars",
    "cdspell",
    "checkhash",
    "checkjobs",
    "checkwinsize",
    "cmdhist",
    "complete_fullquote",
    "direxpand",
    "dirspell",
    "dotglob",
    "execfail",
    "expand_aliases",
    "failglob",
    "force_fignore",
    "globasciiranges",
    "globskipdots",
    "globstar",
    "gnu_errfmt",
    "histappend",
    "histreedit",
    "histverify",
    "hostcomplete",
    "huponexit",
    "inherit_errexit",
    "interactive_comments",
    "lastpipe",
    "lithist",
    "mailwarn",
    "no_empty_cmd_completion",
    "nocaseglob",
    "nocasematch",
    "nullglob",
    "progcomp",
    "promptvars",
    "shift_verbose",
    "sourcepath",
    "xpg_echo",
];

/// Whether `set -X` (or `bash -X`) leaves the reading alone.
pub(super) fn safe_flag(c: char) -> bool {
    SAFE_FLAGS.contains(c)
}

/// Whether `set -o NAME` (or `bash -o NAME`) leaves the reading alone.
pub(super) fn safe_set_name(name: &str) -> bool {
    SAFE_SET_NAMES.contains(&name)
}

/// Whether `shopt -s NAME` (or `bash -O NAME`) leaves the reading alone.
pub(super) fn safe_shopt_name(name: &str) -> bool {
    SAFE_SHOPT_NAMES.contains(&name)
}

impl Analysis {
    /// `set [-+abefhkmnptuvxBCEHPT] [-+o NAME] [--] [ARG...]`.
    pub(super) fn set_builtin(&mut self, args: &[Word]) {
        let mut i = 0;
        while let Some(a) = args.get(i) {
            let v = a.value.as_str();
            if !a.is_static() {
                self.note("a `set` option computed at run time");
                return;
            }
            // `--`, `-`, or the first word that is not an option: positional parameters.
            if !(v.starts_with('-') || v.starts_with('+')) || v.len() < 2 || v == "--" {
                return;
            }
            i += 1;
            for c in v[1..].chars() {
                if c == 'o' {
                    // `set -o` alone lists the options.
                    if let Some(name) = args.get(i) {
                        if !(name.is_static() && safe_set_name(&name.value)) {
                            self.note("a shell option that changes how commands are read");
                        }
                        i += 1;
                    }
                } else if !safe_flag(c) {
                    self.note("a shell option that changes how commands are read");
                }
            }
        }
    }

    /// `shopt [-pqsuo] [NAME...]`: setting or unsetting a name off the safe list.
    pub(super) fn shopt_builtin(&mut self, args: &[Word]) {
        let mut changes = false;
        let mut set_names = false;
        let mut names = Vec::new();
        for a in args {
            let v = a.value.as_str();
            if !a.is_static() {
                self.note("a `shopt` option computed at run time");
                return;
            }
            match v.strip_prefix('-') {
                Some(flags) if !flags.is_empty() && names.is_empty() => {
                    changes |= flags.contains(['s', 'u']);
                    set_names |= flags.contains('o');
                }
                _ => names.push(v),
            }
        }
        if !changes || names.is_empty() {
            // Printing or querying.
            return;
        }
        let safe = |n: &str| {
            if set_names {
                safe_set_name(n)
            } else {
                safe_shopt_name(n)
            }
        };
        if !names.iter().all(|n| safe(n)) {
            self.note("a shell option that changes how commands are read");
        }
    }
}
