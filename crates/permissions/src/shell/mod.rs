//! A static, fail-closed analysis of a bash command line: every command it runs (through
//! `;`, `&&`, `||`, pipes, `&`, newlines, `( )`, `{ }`, `if`/`while`/`for` bodies, and
//! through wrappers such as `env`, `sudo`, `xargs`, `timeout`, `sh -c STRING`), the files it
//! redirects output into, and whatever it does that cannot be known before it runs
//! (expansions in command position, command and process substitution, `eval`, `source`,
//! function definitions, arithmetic on variables, ...).
//!
//! The permission policy matches its rules against this analysis, so it is a security
//! boundary: it errs towards "unresolved" whenever bash could do something the words do not
//! show. It is a focused hand-written reader rather than a full shell grammar (or a binding to
//! one) on purpose: the policy needs to know what it cannot see, and a general parser answers
//! a different question (what the program means) and has no notion of "give up here".
//! Quoting, escapes (`\x`, `'..'`, `".."`, `$'..'`) and here-documents are resolved as bash
//! resolves them; a program written as a path is matched by its last component.

mod commands;
mod lexer;
mod parser;
mod readonly;
mod variables;

pub use lexer::Word;

/// Text longer than this is not analyzed (it is reported unresolved): it bounds the work.
pub const MAX_COMMAND_BYTES: usize = 1 << 20;

/// What a command line runs and writes, as far as can be told without running it.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ShellAnalysis {
    /// Every command run, wrappers and what they wrap both included, in order.
    pub commands: Vec<Command>,
    /// Files written by redirections (`>`, `>>`, `&>`, `2>`, `>|`, `<>`) and `tee`.
    pub writes: Vec<Word>,
    /// Why the line cannot be resolved statically; empty when it can.
    pub unresolved: Vec<String>,
    /// `http(s)://` words.
    pub urls: Vec<String>,
    /// One entry per simple command of the line as written, for the permission request.
    pub segments: Vec<Segment>,
}

/// Internal name while building.
type Analysis = ShellAnalysis;

/// One command the line runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    /// The program as written, quotes resolved (`/usr/bin/touch`).
    pub program: String,
    /// The program's name for matching (`touch`).
    pub name: String,
    /// Its arguments.
    pub args: Vec<Word>,
    /// How many wrappers or `sh -c` levels it sits under (0 at the top).
    pub depth: usize,
}

impl Command {
    /// The command's words: its name, then its arguments.
    pub fn words(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.name.as_str()).chain(self.args.iter().map(|a| a.value.as_str()))
    }
}

/// One simple command as written (for the permission request's description).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    /// The executable as written, e.g. `git`.
    pub identifier: String,
    /// The segment's text, including its arguments.
    pub text: String,
    /// Whether the command is known to have no side effects.
    pub read_only: bool,
}

impl ShellAnalysis {
    /// Whether every command and write target is known statically.
    pub fn is_resolved(&self) -> bool {
        self.unresolved.is_empty()
    }

    /// Whether any output goes into a file.
    pub fn write_redirection(&self) -> bool {
        !self.writes.is_empty()
    }

    /// The files written, as written.
    pub fn redirect_paths(&self) -> Vec<String> {
        let mut seen = std::collections::HashSet::new();
        self.writes
            .iter()
            .filter(|w| seen.insert(w.value.as_str()))
            .map(|w| w.value.clone())
            .collect()
    }

    fn note(&mut self, why: &str) {
        if !self.unresolved.iter().any(|w| w == why) {
            self.unresolved.push(why.to_owned());
        }
    }

    /// Analyzes `text` (a whole line, or a `sh -c` string) into `self`.
    fn analyze_text(&mut self, text: &str, depth: usize) {
        if depth > commands::MAX_DEPTH {
            self.note("command strings nested too deeply");
            return;
        }
        if text.len() > MAX_COMMAND_BYTES {
            self.note("a command too long to analyze");
            return;
        }
        let lexed = lexer::lex(text);
        for why in &lexed.unresolved {
            self.note(why);
        }
        let simples = parser::simple_commands(&lexed.toks, &mut self.unresolved);
        for simple in &simples {
            let first_command = self.commands.len();
            self.resolve(&simple.words, true, depth);
            let mut writes_here = false;
            for (op, target) in &simple.redirects {
                writes_here |= self.redirect(op, target.as_ref());
            }
            // `tee FILE...` writes its file arguments.
            let tees: Vec<Word> = self.commands[first_command..]
                .iter()
                .filter(|c| c.name == "tee")
                .flat_map(|c| c.args.iter().filter(|a| !a.value.starts_with('-')).cloned())
                .collect();
            writes_here |= !tees.is_empty();
            self.writes.extend(tees);
            for w in &simple.words {
                if w.value.starts_with("http://") || w.value.starts_with("https://") {
                    self.urls.push(w.value.clone());
                }
            }
            if let Some(cmd) = self.commands.get(first_command) {
                let start = simple.words.first().map_or(0, |w| w.start);
                let end = simple.end.max(start);
                let text = text.get(start..end).unwrap_or(&cmd.program).trim_end();
                let args: Vec<&str> = cmd.args.iter().map(|a| a.value.as_str()).collect();
                let read_only = !writes_here && readonly::is_read_only(&cmd.name, &args);
                let identifier = simple
                    .words
                    .iter()
                    .find(|w| w.assign.is_none())
                    .map_or_else(|| cmd.program.clone(), |w| w.value.clone());
                self.segments.push(Segment {
                    identifier,
                    text: text.to_owned(),
                    read_only,
                });
            }
        }
        // Substitutions make the line unresolved already; their commands are still listed
        // so deny rules and people see them.
        for inner in &lexed.substitutions {
            self.analyze_text(inner, depth + 1);
        }
    }

    /// Records a redirection; returns whether it writes a file.
    fn redirect(&mut self, op: &str, target: Option<&Word>) -> bool {
        let Some(target) = target else {
            self.note("a redirection without a target");
            return false;
        };
        // The descriptor in front: digits (`2>`) or a variable to store a new one in (`{fd}>`).
        let bare = match op.strip_prefix('{').and_then(|r| r.split_once('}')) {
            Some((_, bare)) => bare,
            None => op.trim_start_matches(|c: char| c.is_ascii_digit()),
        };
        if bare.starts_with("<<") || bare == "<" || bare == "<&" {
            // Here-documents, here-strings and input: nothing is written.
            return false;
        }
        if bare.ends_with('&')
            && (target.value == "-" || target.value.chars().all(|c| c.is_ascii_digit()))
        {
            // `2>&1`, `>&-`: descriptor plumbing.
            return false;
        }
        if matches!(
            target.value.as_str(),
            "/dev/null" | "/dev/stdout" | "/dev/stderr"
        ) && target.is_static()
        {
            return false;
        }
        self.writes.push(target.clone());
        true
    }
}

/// Analyzes one command line.
pub fn analyze(command: &str) -> ShellAnalysis {
    let mut analysis = ShellAnalysis::default();
    analysis.analyze_text(command, 0);
    analysis
}

#[cfg(test)]
mod tests;
