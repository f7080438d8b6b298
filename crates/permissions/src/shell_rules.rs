//! Matching `shell(...)` rules on the analysis of a command line. Allow rules are read
//! strictly (the words must be exactly there, in order, right after the program), deny rules
//! generously (options between the program and the words are skipped, and a word whose value
//! is only known at run time matches anything).

use crate::shell::{Command, Word};

/// Directories whose programs a name-only rule (`shell(git)`) may approve when the command
/// names the program by path: elsewhere a file named `git` could be anything.
const SYSTEM_DIRS: &[&str] = &[
    "/bin",
    "/sbin",
    "/usr/bin",
    "/usr/sbin",
    "/usr/local/bin",
    "/usr/local/sbin",
];

/// Whether an allow rule's `words` approve `cmd`.
pub(crate) fn allows(words: &[String], cmd: &Command) -> bool {
    let Some((program, rest)) = words.split_first() else {
        return false;
    };
    if cmd.name != *program {
        return false;
    }
    if cmd.program.contains('/') {
        let dir = cmd.program.rsplit_once('/').map_or("", |(d, _)| d);
        if !SYSTEM_DIRS.contains(&dir) {
            return false;
        }
    }
    rest.len() <= cmd.args.len()
        && rest
            .iter()
            .zip(&cmd.args)
            .all(|(r, a)| a.is_static() && a.value == *r)
}

/// Whether a deny rule's `words` cover `cmd`.
pub(crate) fn denies(words: &[String], cmd: &Command) -> bool {
    let Some((program, rest)) = words.split_first() else {
        return false;
    };
    if cmd.name != *program {
        return false;
    }
    let mut want = rest.iter().peekable();
    let mut after_option = false;
    for arg in &cmd.args {
        let Some(next) = want.peek() else { break };
        if may_be(arg, next) {
            want.next();
            after_option = false;
        } else if arg.value.starts_with('-') {
            after_option = true;
        } else if after_option {
            // Possibly the option's value (`git -C dir push`).
            after_option = false;
        } else {
            return false;
        }
    }
    want.peek().is_none()
}

/// Whether `arg` may be `word` when the command runs.
fn may_be(arg: &Word, word: &str) -> bool {
    if arg.is_static() {
        return arg.value == word;
    }
    if arg.dynamic || arg.brace {
        return true;
    }
    globset::GlobBuilder::new(&arg.value)
        .literal_separator(true)
        .build()
        .map(|g| g.compile_matcher().is_match(word))
        .unwrap_or(true)
}
