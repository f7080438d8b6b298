//! Shells started by the line. `bash`/`rbash -c STRING` is read as a command line of its own
//! (the same grammar). Every other shell's string is read too, so that its commands are listed
//! and deny rules see them, but the line is unresolved: its grammar is not bash's (dash reads
//! `echo x &>/dev/null touch m` as `echo x &` then `>/dev/null touch m`, and has no `$'..'`;
//! zsh has `repeat`, `path=(..)`, `${(e)..}`). A shell that reads a script, standard input, or
//! start-up files the line does not show (`-i`, `-l`, `--rcfile`) is unresolved as well.

use super::shell_options::{safe_flag, safe_set_name, safe_shopt_name};
use crate::shell::{Analysis, Word};

/// Shells whose `-c STRING` is bash's grammar.
const BASH: &[&str] = &["bash", "rbash"];

/// Shells with a grammar of their own.
const OTHER: &[&str] = &[
    "sh", "dash", "ash", "hush", "ksh", "ksh93", "mksh", "lksh", "pdksh", "oksh", "zsh", "yash",
    "posh", "fish", "csh", "tcsh",
];

/// Multi-call programs whose first argument names the applet (`busybox sh -c ..`).
const MULTI_CALL: &[&str] = &["busybox", "toybox"];

/// Whether `name` is read by [`Analysis::shell`].
pub(super) fn runs_shell(name: &str) -> bool {
    BASH.contains(&name) || OTHER.contains(&name) || MULTI_CALL.contains(&name)
}

/// What one word of a shell's options is followed by.
enum Takes {
    SetName,
    ShoptName,
}

impl Analysis {
    /// `bash [options] -c STRING [name args]`, `bash script`, `bash` (stdin), and the others.
    pub(super) fn shell(&mut self, name: &str, args: &[Word], depth: usize) {
        if MULTI_CALL.contains(&name) {
            match args.first() {
                Some(applet) if !applet.is_static() => {
                    self.note("a program name computed at run time");
                }
                Some(applet) if runs_shell(&applet.value) => {
                    // busybox's `bash` applet is its ash.
                    self.note("a shell other than bash (its grammar is not bash's)");
                    self.shell_arguments(&args[1..], depth);
                }
                Some(_) => self.resolve(args, false, depth + 1),
                None => {}
            }
            return;
        }
        if !BASH.contains(&name) {
            self.note("a shell other than bash (its grammar is not bash's)");
        }
        self.shell_arguments(args, depth);
    }

    /// Reads bash's options and what they make it run.
    fn shell_arguments(&mut self, args: &[Word], depth: usize) {
        let mut i = 0;
        let mut run_string = false;
        while let Some(a) = args.get(i) {
            let v = a.value.as_str();
            if !a.is_static() {
                self.note("a shell option computed at run time");
                return;
            }
            if v == "--" || v == "-" {
                i += 1;
                break;
            }
            if let Some(long) = v.strip_prefix("--") {
                match long {
                    "norc" | "noprofile" | "restricted" | "verbose" | "noediting" | "help"
                    | "version" | "dump-strings" | "dump-po-strings" => {}
                    "login" => self.note("a shell reading start-up files"),
                    "rcfile" | "init-file" => {
                        self.note("a shell reading start-up files");
                        return;
                    }
                    _ => {
                        self.note("a shell option the analysis does not know");
                        return;
                    }
                }
                i += 1;
                continue;
            }
            if !(v.starts_with('-') || v.starts_with('+')) || v.len() < 2 {
                break;
            }
            // A cluster: `-ec`, `-eo pipefail`; each `o`/`O` takes the next word in turn.
            let mut takes = Vec::new();
            for c in v[1..].chars() {
                match c {
                    'c' => run_string = true,
                    's' => self.note("a shell reading commands from standard input"),
                    'i' | 'l' => self.note("a shell reading start-up files"),
                    'o' => takes.push(Takes::SetName),
                    'O' => takes.push(Takes::ShoptName),
                    'r' | 'D' => {}
                    c if safe_flag(c) => {}
                    _ => self.note("a shell option that changes how commands are read"),
                }
            }
            i += 1;
            for take in takes {
                let Some(option) = args.get(i) else { break };
                let safe = option.is_static()
                    && match take {
                        Takes::SetName => safe_set_name(&option.value),
                        Takes::ShoptName => safe_shopt_name(&option.value),
                    };
                if !safe {
                    self.note("a shell option that changes how commands are read");
                }
                i += 1;
            }
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
