//! Turns a simple command's words into the commands it runs: assignments set aside, the
//! program's path reduced to its name, and wrappers that run their arguments as a command
//! (`env`, `command`, `exec`, `nice`, `nohup`, `timeout`, `xargs`, `sudo`, `find -exec`,
//! `sh -c STRING`, ...) looked through, recursively.

use super::lexer::Word;
use super::{Analysis, Command};

/// How deep wrappers and `sh -c` strings are followed before giving up (unresolved).
pub(crate) const MAX_DEPTH: usize = 8;

/// Shells whose `-c STRING` is read as a command line of its own.
const SHELLS: &[&str] = &["sh", "bash", "zsh", "dash", "ksh", "ash", "mksh", "busybox"];

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

/// Whether assigning `name` changes which program runs or injects code into one.
pub(crate) fn is_dangerous_variable(name: &str) -> bool {
    matches!(
        name,
        "PATH"
            | "ENV"
            | "IFS"
            | "SHELLOPTS"
            | "BASHOPTS"
            | "PS4"
            | "PROMPT_COMMAND"
            | "EXECIGNORE"
            | "EDITOR"
            | "VISUAL"
            | "LESSOPEN"
            | "LESSCLOSE"
            | "PERL5OPT"
            | "PERL5LIB"
            | "PYTHONPATH"
            | "PYTHONSTARTUP"
            | "NODE_OPTIONS"
            | "RUBYOPT"
    ) || ["LD_", "DYLD_", "BASH_", "GIT_"]
        .iter()
        .any(|p| name.starts_with(p))
        || name.ends_with("PAGER")
        || name.ends_with("ASKPASS")
}

/// The last component of a program written as a path.
pub(crate) fn base_name(program: &str) -> &str {
    program.rsplit('/').next().unwrap_or(program)
}

impl Analysis {
    /// Records the commands `words` runs. `assignments` says whether leading `NAME=value`
    /// words are assignments (they are for a plain command and for `env`, not for `nice`).
    pub(crate) fn resolve(&mut self, words: &[Word], assignments: bool, depth: usize) {
        if depth > MAX_DEPTH {
            self.note("wrappers nested too deeply");
            return;
        }
        let mut rest = words;
        while assignments && let Some(w) = rest.first() {
            let Some(len) = w.assign else { break };
            let name = &w.value[..len];
            if is_dangerous_variable(name) {
                self.note(&format!("an assignment to {name}"));
            }
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
            "exec" => {
                let inner = skip_options(args, &["-a"], &["-c", "-l", "-cl", "-lc"]);
                match inner {
                    Some([]) => {
                        self.note("`exec` without a command (it rewires descriptors)");
                        return;
                    }
                    other => other,
                }
            }
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
            "xargs" => {
                let r = skip_options(
                    args,
                    &[
                        "-a",
                        "-d",
                        "-E",
                        "-I",
                        "-L",
                        "-n",
                        "-P",
                        "-s",
                        "--arg-file",
                        "--delimiter",
                        "--eof",
                        "--replace",
                        "--max-lines",
                        "--max-args",
                        "--max-procs",
                        "--max-chars",
                        "--process-slot-var",
                    ],
                    &[
                        "-0",
                        "-o",
                        "-p",
                        "-r",
                        "-t",
                        "-x",
                        "--null",
                        "--interactive",
                        "--no-run-if-empty",
                        "--verbose",
                        "--exit",
                        "--open-tty",
                        "-i",
                        "-l",
                        "-e",
                    ],
                );
                match r {
                    // With no command xargs runs `echo`.
                    Some([]) => {
                        self.resolve(&[Word::literal("echo")], false, depth + 1);
                        return;
                    }
                    other => other,
                }
            }
            "sudo" | "doas" => {
                let r = skip_options(
                    args,
                    &[
                        "-u",
                        "-g",
                        "-h",
                        "-C",
                        "-D",
                        "-p",
                        "-r",
                        "-t",
                        "-U",
                        "-T",
                        "-R",
                        "--user",
                        "--group",
                        "--host",
                        "--prompt",
                        "--chdir",
                        "--role",
                        "--type",
                        "--other-user",
                        "--close-from",
                        "--command-timeout",
                        "--chroot",
                    ],
                    &[
                        "-A",
                        "-b",
                        "-E",
                        "-H",
                        "-i",
                        "-k",
                        "-K",
                        "-l",
                        "-n",
                        "-P",
                        "-S",
                        "-s",
                        "-v",
                        "-V",
                        "-L",
                        "--",
                        "--askpass",
                        "--background",
                        "--preserve-env",
                        "--set-home",
                        "--login",
                        "--non-interactive",
                        "--stdin",
                        "--shell",
                        "--reset-timestamp",
                        "--remove-timestamp",
                        "--list",
                        "--preserve-groups",
                    ],
                );
                if args.iter().any(|a| a.value == "-e" || a.value == "--edit") {
                    self.note("`sudo -e` (it edits files)");
                    return;
                }
                match r {
                    Some([])
                        if args.iter().any(|a| {
                            matches!(a.value.as_str(), "-s" | "-i" | "--shell" | "--login")
                        }) =>
                    {
                        self.note("a shell reading commands from standard input");
                        return;
                    }
                    Some(r) => {
                        // sudo takes VAR=value before the command, as env does.
                        self.resolve(r, true, depth + 1);
                        return;
                    }
                    None => None,
                }
            }
            "find" => {
                self.find_exec(args, depth);
                return;
            }
            n if SHELLS.contains(&n) => {
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

    fn naming_builtin(&mut self, name: &str, args: &[Word]) {
        for a in args {
            let value = a.value.as_str();
            let var = value
                .split_once("+=")
                .or_else(|| value.split_once('='))
                .map_or(value, |(n, _)| n);
            if is_dangerous_variable(var) {
                self.note(&format!("an assignment to {var}"));
            }
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
                if v.starts_with('-') && v.contains('i') {
                    // Assignments to an integer variable are arithmetic on their values.
                    self.note("arithmetic on variables");
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

    fn env(&mut self, args: &[Word], depth: usize) {
        let mut i = 0;
        while let Some(a) = args.get(i) {
            let v = a.value.as_str();
            if a.assign.is_some() || (!v.starts_with('-') && v.contains('=') && !v.starts_with('='))
            {
                // env takes NAME=value whatever its quoting.
                let name = v.split('=').next().unwrap_or(v);
                if is_dangerous_variable(name) {
                    self.note(&format!("an assignment to {name}"));
                }
                i += 1;
                continue;
            }
            match v {
                "-i" | "-" | "-0" | "--null" | "--ignore-environment" | "-v" | "--debug" => i += 1,
                "-u" | "--unset" | "-C" | "--chdir" => i += 2,
                "-S" | "--split-string" => {
                    // `env -S 'cmd args'` splits the string into the command.
                    let Some(s) = args.get(i + 1) else { return };
                    return self.split_string(&s.value, &args[i + 2..], depth);
                }
                "--" => {
                    i += 1;
                    break;
                }
                _ if v.starts_with("--unset=") || v.starts_with("--chdir=") => i += 1,
                _ if v.starts_with("-u") || v.starts_with("-C") => i += 1,
                _ if v.starts_with("-S") => {
                    return self.split_string(&v[2..], &args[i + 1..], depth);
                }
                _ if v.starts_with('-') && v.len() > 1 => {
                    self.note("a wrapper option the analysis does not know");
                    return;
                }
                _ => break,
            }
        }
        if let Some(rest) = args.get(i..).filter(|r| !r.is_empty()) {
            self.resolve(rest, false, depth + 1);
        }
    }

    fn split_string(&mut self, s: &str, rest: &[Word], depth: usize) {
        let mut words: Vec<Word> = s.split_whitespace().map(Word::literal).collect();
        if s.contains(['\'', '"', '\\', '$', '`']) {
            self.note("an `env -S` string with quoting");
        }
        words.extend(rest.iter().cloned());
        self.resolve(&words, false, depth + 1);
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

    /// `bash [options] -c STRING [name args]`, `bash script`, `bash` (stdin).
    fn shell(&mut self, name: &str, args: &[Word], depth: usize) {
        let mut i = 0;
        let mut run_string = false;
        // `busybox sh -c ...`: the applet comes first.
        if name == "busybox" {
            match args.first() {
                Some(a) if SHELLS.contains(&a.value.as_str()) => i = 1,
                Some(_) => return self.resolve(args, false, depth + 1),
                None => return,
            }
        }
        while let Some(a) = args.get(i) {
            let v = a.value.as_str();
            if matches!(v, "-o" | "+o" | "-O" | "+O") {
                i += 2;
                continue;
            }
            if matches!(v, "--rcfile" | "--init-file") {
                self.note("a shell reading a startup file");
                return;
            }
            if v == "--" {
                i += 1;
                break;
            }
            if v.starts_with("--") {
                i += 1;
                continue;
            }
            if (v.starts_with('-') || v.starts_with('+')) && v.len() > 1 {
                if v[1..].contains('c') {
                    run_string = true;
                }
                if v[1..].contains('s') {
                    self.note("a shell reading commands from standard input");
                    return;
                }
                i += 1;
                continue;
            }
            break;
        }
        match (run_string, args.get(i)) {
            (true, Some(s)) if s.is_static() => self.analyze_text(&s.value, depth + 1),
            (true, Some(_)) => self.note("a shell command string computed at run time"),
            (true, None) => self.note("a shell `-c` without a command string"),
            (false, Some(_)) => self.note("a shell running a script file"),
            (false, None) => self.note("a shell reading commands from standard input"),
        }
    }
}

/// Skips a wrapper's options: `with_arg` take the next word (or `=value`/attached), `flags`
/// take none; `--` ends them. `None` when an option is not known (the analysis gives up).
fn skip_options<'a>(args: &'a [Word], with_arg: &[&str], flags: &[&str]) -> Option<&'a [Word]> {
    let mut i = 0;
    while let Some(a) = args.get(i) {
        let v = a.value.as_str();
        if v == "--" {
            return Some(&args[i + 1..]);
        }
        if !v.starts_with('-') || v == "-" {
            break;
        }
        if flags.contains(&v) {
            i += 1;
        } else if with_arg.contains(&v) {
            i += 2;
        } else if with_arg.iter().any(|o| {
            v.starts_with(o)
                && (o.starts_with("--") && v[o.len()..].starts_with('=') || !o.starts_with("--"))
        }) || flags.iter().any(|f| {
            !f.starts_with("--")
                && f.len() == 2
                && v.starts_with(f)
                && v.len() > 2
                && matches!(*f, "-i" | "-l" | "-e")
        }) {
            // `-uroot`, `--user=root`, xargs `-i{}` / `-l1`.
            i += 1;
        } else if v.len() > 2
            && !v.starts_with("--")
            && v[1..]
                .chars()
                .all(|c| flags.contains(&format!("-{c}").as_str()))
        {
            // A cluster of flags: `-ks`.
            i += 1;
        } else {
            return None;
        }
    }
    Some(args.get(i..).unwrap_or(&[]))
}

fn skip_nice(args: &[Word]) -> Option<&[Word]> {
    let mut i = 0;
    while let Some(a) = args.get(i) {
        let v = a.value.as_str();
        if v == "--" {
            return Some(&args[i + 1..]);
        }
        if v == "-n" || v == "--adjustment" {
            i += 2;
        } else if v.starts_with("--adjustment=")
            || (v.starts_with("-n") && v.len() > 2)
            || (v.len() > 1 && v.starts_with('-') && v[1..].parse::<i64>().is_ok())
        {
            i += 1;
        } else if v.starts_with('-') && v.len() > 1 {
            return None;
        } else {
            break;
        }
    }
    Some(args.get(i..).unwrap_or(&[]))
}
