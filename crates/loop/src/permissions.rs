//! The permission policy: `--allow-all-tools`, `--allow-tool PATTERN`, `--deny-tool PATTERN`.
//!
//! Patterns name a kind or a tool, optionally narrowed by an argument:
//! `shell` (any shell command), `shell(git)` (commands whose program is `git`), `shell(git:*)`
//! (commands whose text starts with `git`), `write` (any file write), `write(src/**)` (writes to
//! paths matching a glob, relative to the working dir), `read`, or a tool name (`bash`, `edit`,
//! an SDK client's tool). Deny wins over allow. A shell command line made of several commands
//! (`a && b | c`) is allowed only if every command is, and denied if any is.

use globset::{Glob, GlobMatcher};

use crate::tools::{PermissionAsk, PermissionKind};

/// One `--allow-tool`/`--deny-tool` pattern.
#[derive(Debug, Clone)]
pub struct ToolPattern {
    text: String,
    head: String,
    arg: Option<PatternArg>,
}

#[derive(Debug, Clone)]
enum PatternArg {
    /// `shell(git)`: the program name equals this.
    Program(String),
    /// `shell(git:*)`: the command text starts with this.
    Prefix(String),
    /// `write(src/**)`: the path matches this glob.
    Glob(GlobMatcher),
}

/// A pattern that could not be parsed.
#[derive(Debug, thiserror::Error)]
#[error(
    "invalid tool pattern {pattern:?}: {reason} (examples: shell, shell(git), shell(git:*), write, write(src/**), bash)"
)]
pub struct PatternError {
    /// The pattern as given.
    pub pattern: String,
    /// What is wrong.
    pub reason: String,
}

impl ToolPattern {
    /// Parses a pattern such as `shell(git:*)`.
    pub fn parse(text: &str) -> Result<Self, PatternError> {
        let err = |reason: &str| PatternError {
            pattern: text.to_owned(),
            reason: reason.to_owned(),
        };
        let text = text.trim();
        let (head, arg) = match text.split_once('(') {
            None => (text, None),
            Some((head, rest)) => {
                let inner = rest
                    .strip_suffix(')')
                    .ok_or_else(|| err("missing closing parenthesis"))?;
                if inner.is_empty() {
                    return Err(err("empty argument"));
                }
                (head, Some(inner))
            }
        };
        if head.is_empty()
            || !head
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
        {
            return Err(err("expected a kind (shell, write, read) or a tool name"));
        }
        let arg = match (head, arg) {
            (_, None) => None,
            ("shell", Some(a)) => Some(match a.strip_suffix(":*") {
                Some(prefix) => PatternArg::Prefix(prefix.to_owned()),
                None => PatternArg::Program(a.to_owned()),
            }),
            (_, Some(a)) => Some(PatternArg::Glob(
                Glob::new(a)
                    .map_err(|e| err(&e.to_string()))?
                    .compile_matcher(),
            )),
        };
        Ok(ToolPattern {
            text: text.to_owned(),
            head: head.to_owned(),
            arg,
        })
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether this pattern covers one command or path (`subject`) of a call.
    fn matches_one(&self, tool: &str, kind: &PermissionKind, subject: &str) -> bool {
        let head_matches = self.head == tool
            || match kind {
                PermissionKind::Shell => self.head == "shell",
                PermissionKind::Write => self.head == "write",
                PermissionKind::Read => self.head == "read",
                PermissionKind::Other(k) => &self.head == k,
            };
        if !head_matches {
            return false;
        }
        match &self.arg {
            None => true,
            Some(PatternArg::Program(p)) => first_word(subject) == p,
            Some(PatternArg::Prefix(p)) => subject.trim_start().starts_with(p.as_str()),
            Some(PatternArg::Glob(g)) => g.is_match(subject),
        }
    }
}

fn first_word(command: &str) -> &str {
    command.split_whitespace().next().unwrap_or("")
}

/// The decision for one tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Run it.
    Approved,
    /// A deny pattern matched.
    DeniedByRules(Vec<String>),
    /// Nothing allowed it and there is nobody to ask.
    NoApprovalRule,
    /// Nothing decided it; a client that handles permissions must be asked.
    Ask,
}

/// The CLI's permission policy.
#[derive(Debug, Clone, Default)]
pub struct PermissionPolicy {
    /// `--allow-all-tools`.
    pub allow_all: bool,
    /// `--allow-tool` patterns.
    pub allow: Vec<ToolPattern>,
    /// `--deny-tool` patterns.
    pub deny: Vec<ToolPattern>,
}

impl PermissionPolicy {
    /// Parses the CLI's flags into a policy.
    pub fn from_flags(
        allow_all: bool,
        allow: &[String],
        deny: &[String],
    ) -> Result<Self, PatternError> {
        Ok(PermissionPolicy {
            allow_all,
            allow: allow
                .iter()
                .map(|p| ToolPattern::parse(p))
                .collect::<Result<_, _>>()?,
            deny: deny
                .iter()
                .map(|p| ToolPattern::parse(p))
                .collect::<Result<_, _>>()?,
        })
    }

    /// Decides a call of `tool` that asked for `ask`. `can_ask` says whether a client can be asked.
    pub fn decide(&self, tool: &str, ask: &PermissionAsk, can_ask: bool) -> Decision {
        let subjects = subjects(ask);
        let denied: Vec<String> = self
            .deny
            .iter()
            .filter(|p| subjects.iter().any(|s| p.matches_one(tool, &ask.kind, s)))
            .map(|p| p.as_str().to_owned())
            .collect();
        if !denied.is_empty() {
            return Decision::DeniedByRules(denied);
        }
        if self.allow_all
            || subjects
                .iter()
                .all(|s| self.allow.iter().any(|p| p.matches_one(tool, &ask.kind, s)))
        {
            return Decision::Approved;
        }
        if can_ask {
            Decision::Ask
        } else {
            Decision::NoApprovalRule
        }
    }
}

/// What patterns are matched against: each command of a shell line, else the subject.
fn subjects(ask: &PermissionAsk) -> Vec<String> {
    if ask.kind == PermissionKind::Shell {
        let commands: Vec<String> = ask.request["commands"]
            .as_array()
            .map(|cmds| {
                cmds.iter()
                    .filter_map(|c| c["identifier"].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        // Program patterns look at identifiers; prefix patterns at the full text. Checking
        // each identifier and the full text keeps `shell(git:*)` on `git status` working.
        if commands.len() > 1 {
            return commands;
        }
    }
    vec![ask.subject.clone()]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn shell(cmd: &str, ids: &[&str]) -> PermissionAsk {
        PermissionAsk {
            kind: PermissionKind::Shell,
            request: json!({"kind":"shell","fullCommandText":cmd,"commands": ids.iter().map(|i| json!({"identifier": i, "readOnly": false})).collect::<Vec<_>>()}),
            intention: String::new(),
            subject: cmd.to_owned(),
        }
    }

    fn write(path: &str) -> PermissionAsk {
        PermissionAsk {
            kind: PermissionKind::Write,
            request: json!({"kind":"write","fileName":path}),
            intention: String::new(),
            subject: path.to_owned(),
        }
    }

    fn policy(allow: &[&str], deny: &[&str]) -> PermissionPolicy {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        PermissionPolicy::from_flags(false, &s(allow), &s(deny)).unwrap()
    }

    #[test]
    fn kinds_programs_prefixes_and_globs() {
        let p = policy(&["shell(git)"], &[]);
        assert_eq!(
            p.decide("bash", &shell("git status", &["git"]), false),
            Decision::Approved
        );
        assert_eq!(
            p.decide("bash", &shell("rm -rf x", &["rm"]), false),
            Decision::NoApprovalRule
        );
        assert_eq!(
            p.decide("bash", &shell("rm -rf x", &["rm"]), true),
            Decision::Ask
        );
        let p = policy(&["shell(git:*)"], &[]);
        assert_eq!(
            p.decide("bash", &shell("git push", &["git"]), false),
            Decision::Approved
        );
        let p = policy(&["write(src/**)"], &[]);
        assert_eq!(
            p.decide("edit", &write("src/a/b.rs"), false),
            Decision::Approved
        );
        assert_eq!(
            p.decide("edit", &write("Cargo.toml"), false),
            Decision::NoApprovalRule
        );
        let p = policy(&["edit"], &[]);
        assert_eq!(p.decide("edit", &write("x"), false), Decision::Approved);
        assert_eq!(
            p.decide("create", &write("x"), false),
            Decision::NoApprovalRule
        );
    }

    #[test]
    fn deny_wins_and_every_command_of_a_line_must_be_allowed() {
        let p = PermissionPolicy::from_flags(true, &[], &["shell(rm)".into()]).unwrap();
        assert_eq!(
            p.decide("bash", &shell("ls && rm -rf /", &["ls", "rm"]), false),
            Decision::DeniedByRules(vec!["shell(rm)".into()])
        );
        let p = policy(&["shell(ls)"], &[]);
        assert_eq!(
            p.decide("bash", &shell("ls && rm x", &["ls", "rm"]), false),
            Decision::NoApprovalRule
        );
        let p = policy(&["shell"], &["write"]);
        assert_eq!(
            p.decide("bash", &shell("ls", &["ls"]), false),
            Decision::Approved
        );
        assert!(matches!(
            p.decide("create", &write("a"), false),
            Decision::DeniedByRules(_)
        ));
    }

    #[test]
    fn bad_patterns_are_clear() {
        for bad in ["", "shell(", "shell()", "sh ell", "write([)"] {
            let err = ToolPattern::parse(bad).unwrap_err().to_string();
            assert!(err.contains("invalid tool pattern"), "{bad}: {err}");
        }
    }
}
