//! Turns a simple command's words into the commands it runs: assignments set aside, the
//! program's path reduced to its name, and wrappers that run their arguments as a command
//! (`env`, `command`, `exec`, `nice`, `nohup`, `timeout`, `xargs`, `sudo`, `find -exec`,
//! `sh -c STRING`, ...) looked through, recursively. Builtins and options that change how
//! later text is read or what a name runs (`eval`, `declare -n`, `set -k`, `shopt -s extglob`,
//! `git -c`) make the line unresolved.

mod env;
mod git;
mod options;
mod shell_options;
mod shells;

use self::options::{
    SUDO_FLAGS, SUDO_WITH_ARG, XARGS_FLAGS, XARGS_WITH_ARG, skip_nice, skip_options,
};
use super::lexer::Word;
use super::variables;
use super::{Analysis, Command};

/// How deep wrappers and `sh -c` strings are followed before giving up (unresolved).
pub(crate) const MAX_DEPTH: usize = 8;

/// Builtins that run code the analysis cannot see.
const OPAQUE_BUILTINS: &[(&str, &str)] = &[
    ("eval", "`eval`"),
    ("source", "`source`"),
    (".", "`.` (source)"),
    ("alias", "an alias definition"),
    ("trap", "a `trap` handler"),
    ("hash", "`hash` (it changes which program a name runs)"),
    ("enable", "`enable` (it loads builtins)"),
    ("fc", "`fc` (it runs history)"),
    ("bind", "`bind`"),
    ("complete", "`complete`"),
    ("compgen", "`compgen`"),
    ("let", "arithmetic on variables"),
    ("coproc", "a `coproc`"),
    ("function", "a function definition"),
    ("sudoedit", "`sudoedit`"),
];

/// Builtins whose arguments name variables (an array subscript there is arithmetic).
const NAMING_BUILTINS: &[&str] = &[
    "declare",
    "typeset",
    "local",
    "export",
    "readonly",
    "read",
    "mapfile",
    "readarray",
    "printf",
    "getopts",
    "unset",
    "wait",
];

/// The last component of a program written as a path.
pub(crate) fn base_name(program: &str) -> &str {
    program.rsplit('/').next().unwrap_or(program)
}

impl Analysis {
    /// Records the commands `words` runs. `assignments` says whether leading `NAME=value`
    /// words are assignments (they are for a plain command, not for `nice`).
    pub(crate) fn resolve(&mut self, words: &[Word], assignments: bool, depth: usize) {
        if depth > MAX_DEPTH {
            self.note("wrappers nested too deeply");
            return;
        }
        let mut rest = words;
        while assignments && let Some(w) = rest.first() {
            let Some(len) = w.assign else { break };
            self.assignment(&w.value[..len]);
            rest = &rest[1..];
        }
        let Some(program) = rest.first() else { return };
        if !program.is_static() {
            self.note("a program name computed at run time");
        }
        if program.value.is_empty() {
            self.note("an empty program name");
        }
        let name = base_name(&program.value).to_owned();
        let args = &rest[1..];
        self.commands.push(Command {
            program: program.value.clone(),
            name: name.clone(),
            args: args.to_vec(),
            depth,
        });
        if let Some((_, why)) = OPAQUE_BUILTINS.iter().find(|(n, _)| *n == name) {
            self.note(why);
            return;
        }
        if matches!(name.as_str(), "test" | "[")
            && args.iter().any(|a| matches!(a.value.as_str(), "-v" | "-R"))
        {
            // `test -v 'a[$(cmd)]'` evaluates the subscript.
            self.note("a variable test with a subscript");
        }
        if NAMING_BUILTINS.contains(&name.as_str()) {
            self.naming_builtin(&name, args);
        }
        let inner = match name.as_str() {
            "set" => return self.set_builtin(args),
            "shopt" => return self.shopt_builtin(args),
            "git" => return self.git(args),
            // `exec -a NAME` is not skipped: the program would see another name, and a
            // multi-call binary (`busybox`) picks what it runs by that name.
            "exec" => match skip_options(args, &[], &["-c", "-l", "-cl", "-lc"]) {
                Some([]) => {
                    self.note("`exec` without a command (it rewires descriptors)");
                    return;
                }
                other => other,
            },
            "command" => {
                if args
                    .first()
                    .is_some_and(|a| a.value.starts_with('-') && a.value.contains(['v', 'V']))
                {
                    // `command -v git` only looks the name up.
                    return;
                }
                skip_options(args, &[], &["-p"])
            }
            "builtin" | "nohup" | "setsid" => skip_options(args, &[], &["-c", "-f", "-w"]),
            "nice" => skip_nice(args),
            "timeout" => skip_options(
                args,
                &["-s", "-k", "--signal", "--kill-after"],
                &["-v", "--verbose", "--preserve-status", "--foreground"],
            )
            .and_then(|r| r.get(1..)),
            "stdbuf" => skip_options(args, &["-i", "-o", "-e"], &[]),
            "time" => skip_options(
                args,
                &["-f", "-o", "--format", "--output"],
                &["-p", "-a", "-v"],
            ),
            "env" => return self.env(args, depth),
            "xargs" => match skip_options(args, XARGS_WITH_ARG, XARGS_FLAGS) {
                // With no command xargs runs `echo`.
                Some([]) => {
                    self.resolve(&[Word::literal("echo")], false, depth + 1);
                    return;
                }
                other => other,
            },
            "sudo" | "doas" => {
                if args.iter().any(|a| a.value == "-e" || a.value == "--edit") {
                    self.note("`sudo -e` (it edits files)");
                    return;
                }
                match skip_options(args, SUDO_WITH_ARG, SUDO_FLAGS) {
                    Some([])
                        if args.iter().any(|a| {
                            matches!(a.value.as_str(), "-s" | "-i" | "--shell" | "--login")
                        }) =>
                    {
                        self.note("a shell reading commands from standard input");
                        return;
                    }
                    // sudo takes NAME=value words before the command, as env does.
                    Some(r) => Some(self.env_assignments(r)),
                    None => None,
                }
            }
            "find" => {
                self.find_exec(args, depth);
                return;
            }
            n if shells::runs_shell(n) => {
                self.shell(n, args, depth);
                return;
            }
            _ => return,
        };
        match inner {
            Some([]) => {}
            Some(r) => self.resolve(r, false, depth + 1),
            None => self.note("a wrapper option the analysis does not know"),
        }
    }

    /// Notes an assignment to `name` (by `NAME=v`, `export`, `env`, `for NAME`, ...).
    pub(crate) fn assignment(&mut self, name: &str) {
        if variables::is_dangerous(name) {
            self.note(&format!("an assignment to {name}"));
        }
    }

    fn naming_builtin(&mut self, name: &str, args: &[Word]) {
        for a in args {
            let value = a.value.as_str();
            let var = value
                .split_once("+=")
                .or_else(|| value.split_once('='))
                .map_or(value, |(n, _)| n);
            self.assignment(var);
            if var.contains('[') || !a.is_static() && name != "printf" {
                self.note("an array subscript or computed name in a variable builtin");
            }
        }
        if matches!(
            name,
            "declare" | "typeset" | "local" | "readonly" | "export"
        ) {
            for a in args {
                let v = a.value.as_str();
                let option = (v.starts_with('-') || v.starts_with('+')) && v != "--";
                if option && v.starts_with('-') && v.contains('i') {
                    // Assignments to an integer variable are arithmetic on their values.
                    self.note("arithmetic on variables");
                }
                if option && v.contains('n') {
                    // `declare -n X=PATH` makes every later `X=...` an assignment to PATH
                    // (`export -n` un-exports: no command sees the variable after it).
                    self.note("a name reference or un-export (`-n`)");
                }
                if v.split_once('=')
                    .is_some_and(|(_, value)| value.starts_with('('))
                {
                    // `declare -a x='(..)'` evaluates the quoted text as a compound assignment.
                    self.note("a compound array assignment");
                }
            }
        }
        if matches!(name, "mapfile" | "readarray") && args.iter().any(|a| a.value.starts_with("-C"))
        {
            self.note("a `mapfile` callback");
        }
    }

    fn find_exec(&mut self, args: &[Word], depth: usize) {
        let mut i = 0;
        while i < args.len() {
            if matches!(
                args[i].value.as_str(),
                "-exec" | "-execdir" | "-ok" | "-okdir"
            ) {
                let begin = i + 1;
                let mut end = begin;
                while end < args.len() && !matches!(args[end].value.as_str(), ";" | "+") {
                    end += 1;
                }
                self.resolve(&args[begin..end], false, depth + 1);
                i = end;
            }
            i += 1;
        }
    }
}
