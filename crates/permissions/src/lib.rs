//! Which tool calls need approval, and why: the analysis of shell commands ([`shell`]: what a
//! command line runs, reads and writes, through wrappers), the request a call asks
//! ([`PermissionAsk`]), the host patterns of `url` rules ([`hosts`]), and the policy that
//! decides a request ([`PermissionPolicy`] at start-up, [`LiveRules`] while a session runs),
//! and the environment every tool process is started with ([`tool_env`]: the engine's own,
//! without its secrets).
//!
//! It decides; it does not enforce. Nothing here runs a command, writes a file or opens a
//! connection (a path rule reads only the metadata of the path it judges, to know every name
//! of it: symlinks resolved, hard links seen): the tools (`turnstile-tools`) do what was
//! approved, and the loop asks the client when the policy says [`Decision::Ask`]. What the
//! rules allow as effects ([`Effects`]) the kernel sandbox (`turnstile-sandbox`) enforces for
//! every process a tool starts. It depends on no other turnstile crate: the tools and the
//! loop depend on it, never the other way.
//!
//! # The policy
//!
//! `--allow-all-tools`, `--allow-tool PATTERN`, `--deny-tool PATTERN`.
//!
//! A pattern names a kind or a built-in tool, optionally narrowed by an argument:
//! - `shell` (any command), `shell(git)` (commands whose program is `git`), `shell(git push)`
//!   or `shell(git push:*)` (commands whose words begin `git push`); `bash(...)` is the same;
//! - `write` / `write(GLOB)` (`create`, `edit`, and the files a shell command redirects into
//!   or `tee`s), `read` / `read(GLOB)` (`view`, `grep`, `glob`); globs are relative to the
//!   session's working directory unless absolute, `*` stays within a path component, `**`
//!   crosses them; `create(GLOB)`, `view(GLOB)`... narrow to one tool;
//! - `url` / `url(HOST)` (`web_fetch`; `--allow-url HOST` and `--deny-url HOST` are
//!   `url(HOST)` rules, see [`hosts`]);
//! - `custom-tool` / `custom-tool(NAME)`: tools an SDK client provides (named when the session
//!   is created, so they cannot be checked at start-up);
//! - a built-in tool name alone: every call of it;
//! - an MCP server's name (`server`: every tool of it) or `server(tool)` (one tool, by its
//!   own name on the server), the Copilot CLI's spelling; the servers are the configured ones,
//!   so a typo is still an error.
//!
//! On top of this start-up policy, a client changes [`LiveRules`] while the session runs
//! (approve-all, configured rules, session- and location-scoped approvals).
//!
//! Unknown kinds or tools are errors at start-up. Deny wins over allow, and over a hook's
//! `allow`. Shell rules are matched on the typed analysis of the command ([`shell`]):
//! every command it runs, through wrappers, must be allowed and none denied; a command the
//! analysis cannot resolve is never approved by a narrow rule and is denied by every deny
//! rule of the shell tool.

mod ask;
mod effects;
pub mod hosts;
mod live;
mod paths;
mod pattern;
mod prompt_request;
pub mod shell;
mod shell_rules;
pub mod tool_env;

use std::path::{Path, PathBuf};

pub use ask::{MCP_KIND, PermissionAsk, PermissionKind};
pub use effects::{Effects, MAX_EXPANDED, Programs};
pub use hosts::{HostPattern, UrlPatternError, UrlRules};
pub use live::{LiveDecision, LiveRules, PermissionRule, RuleScope, rules_of_approval};
pub use paths::real_path;
pub use pattern::{BUILTIN_TOOLS, KINDS, PatternError, ToolPattern};
use pattern::{Family, PatternArg, family_of};
pub use prompt_request::{prompt_request, with_tool_call_id};

use shell::ShellAnalysis;

/// The decision for one tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Run it.
    Approved,
    /// These deny patterns matched.
    DeniedByRules(Vec<String>),
    /// Nothing allowed it and there is nobody to ask.
    NoApprovalRule {
        /// `--allow-tool` patterns that would allow it (empty when no narrow one can).
        allow_with: Vec<String>,
        /// Why no narrow pattern can allow it (an unresolvable shell command), if so.
        unresolved: Vec<String>,
    },
    /// Nothing decided it; a client that handles permissions must be asked.
    Ask,
}

impl Decision {
    /// What to add to the denial text so the user knows how to allow the call.
    pub fn hint(&self) -> String {
        match self {
            Decision::NoApprovalRule {
                allow_with,
                unresolved,
            } => {
                if !unresolved.is_empty() {
                    format!(
                        " (the command contains {}, which no narrow rule approves; only --allow-tool 'shell' or --allow-all-tools allows it)",
                        unresolved.join(", ")
                    )
                } else if allow_with.is_empty() {
                    String::new()
                } else {
                    // A line of thousands of commands must not make a message of thousands.
                    const SHOWN: usize = 8;
                    let flags: Vec<String> = allow_with
                        .iter()
                        .take(SHOWN)
                        .map(|p| format!("--allow-tool '{p}'"))
                        .collect();
                    let more = allow_with.len().saturating_sub(SHOWN);
                    let more = if more > 0 {
                        format!(" and {more} more")
                    } else {
                        String::new()
                    };
                    format!(" (allow with {}{more})", flags.join(" "))
                }
            }
            _ => String::new(),
        }
    }
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

/// A call the tool itself asks no permission for (reads, client tools, `task_complete`).
#[derive(Debug, Clone, Copy)]
pub enum Unasked<'a> {
    /// A built-in tool with the paths it reads (empty: the working directory).
    Builtin(&'a [PathBuf]),
    /// A tool an SDK client provides.
    Client,
}

impl PermissionPolicy {
    /// Parses the CLI's flags into a policy; an unknown kind or tool is an error.
    pub fn from_flags(
        allow_all: bool,
        allow: &[String],
        deny: &[String],
    ) -> Result<Self, PatternError> {
        Self::from_flags_with_mcp(allow_all, allow, deny, &[])
    }

    /// Like [`Self::from_flags`], with the names of the configured MCP servers, which
    /// patterns may name (`server`, `server(tool)`).
    pub fn from_flags_with_mcp(
        allow_all: bool,
        allow: &[String],
        deny: &[String],
        mcp_servers: &[String],
    ) -> Result<Self, PatternError> {
        let parse = |v: &[String]| {
            v.iter()
                .map(|p| ToolPattern::parse_with(p, mcp_servers))
                .collect::<Result<Vec<_>, _>>()
        };
        Ok(PermissionPolicy {
            allow_all,
            allow: parse(allow)?,
            deny: parse(deny)?,
        })
    }

    /// The host rules of the `url(HOST)` patterns (from `--allow-url`, `--deny-url` or
    /// `--allow-tool 'url(HOST)'`), which `web_fetch` applies to every redirect and to the
    /// block on local addresses.
    pub fn url_rules(&self) -> UrlRules {
        let hosts = |v: &[ToolPattern]| {
            v.iter()
                .filter(|p| p.family == Family::Url)
                .filter_map(|p| match &p.arg {
                    Some(PatternArg::Host(h)) => Some(h.clone()),
                    _ => None,
                })
                .collect()
        };
        UrlRules {
            allow: hosts(&self.allow),
            deny: hosts(&self.deny),
        }
    }

    /// Decides a call of `tool` that asked for `ask`, in working directory `cwd`. `can_ask`
    /// says whether a client can be asked.
    pub fn decide(&self, tool: &str, ask: &PermissionAsk, cwd: &Path, can_ask: bool) -> Decision {
        let denied = self.denied_by(tool, ask, cwd);
        if !denied.is_empty() {
            return Decision::DeniedByRules(denied);
        }
        if self.allow_all {
            return Decision::Approved;
        }
        let family = family_of_ask(tool, ask);
        let (approved, allow_with, unresolved) = match (&ask.shell, family) {
            (Some(analysis), Family::Shell) => self.allow_shell(tool, analysis, cwd),
            (_, Family::Mcp) => {
                let server = mcp_server(ask);
                let ok = self
                    .allow
                    .iter()
                    .any(|p| mcp_covers(p, server, &ask.subject));
                (ok, vec![format!("{server}({})", ask.subject)], Vec::new())
            }
            (_, Family::Write | Family::Read) => {
                // A narrow path rule approves a file only by every name of it: a symlink
                // inside an allowed directory may lead out of it.
                let path = Path::new(&ask.subject);
                let names = paths::names_of(path, cwd);
                let ok = self.allow.iter().any(|p| {
                    p.covers(tool, family)
                        && match &p.arg {
                            None => true,
                            Some(PatternArg::Path(g)) => {
                                !names.linked && names.names.iter().all(|n| g.matches(n, cwd))
                            }
                            Some(_) => false,
                        }
                });
                let kind = if family == Family::Write {
                    "write"
                } else {
                    "read"
                };
                let hint = format!("{kind}({})", paths::display_relative(path, cwd));
                (ok, vec![hint], Vec::new())
            }
            (_, Family::Url) => {
                let (host, port) = url_host(&ask.subject);
                let ok = self.allow.iter().any(|p| {
                    p.covers(tool, Family::Url)
                        && match &p.arg {
                            None => true,
                            Some(PatternArg::Host(h)) => h.matches(&host, port),
                            Some(_) => false,
                        }
                });
                (ok, vec![format!("url({host})")], Vec::new())
            }
            _ => (
                self.allow.iter().any(|p| p.head == tool && p.arg.is_none()),
                vec![tool.to_owned()],
                Vec::new(),
            ),
        };
        if approved {
            Decision::Approved
        } else if can_ask {
            Decision::Ask
        } else {
            Decision::NoApprovalRule {
                allow_with,
                unresolved,
            }
        }
    }

    /// The deny patterns that match a call (empty: none). Checked also when a hook allowed it.
    pub fn denied_by(&self, tool: &str, ask: &PermissionAsk, cwd: &Path) -> Vec<String> {
        let family = family_of_ask(tool, ask);
        let mut denied = Vec::new();
        // Every name of a file tool's path, read from the file system once and only when a
        // path rule needs it.
        let names = std::cell::OnceCell::new();
        let names = || names.get_or_init(|| paths::names_of(Path::new(&ask.subject), cwd));
        for p in &self.deny {
            let hit = match (&ask.shell, family) {
                (Some(analysis), Family::Shell) => denies_shell(p, tool, analysis, cwd),
                (_, Family::Mcp) => mcp_covers(p, mcp_server(ask), &ask.subject),
                (_, Family::Write | Family::Read) => {
                    p.covers(tool, family)
                        && match &p.arg {
                            None => true,
                            // Denied by any name of the file (a symlink leading into the
                            // denied tree), and, for a file with other hard links whose names
                            // cannot be known, by every path deny of its family.
                            Some(PatternArg::Path(g)) => {
                                let names = names();
                                names.linked || names.names.iter().any(|n| g.matches(n, cwd))
                            }
                            Some(_) => false,
                        }
                }
                (_, Family::Url) => {
                    let (host, port) = url_host(&ask.subject);
                    p.covers(tool, family)
                        && match &p.arg {
                            None => true,
                            Some(PatternArg::Host(h)) => h.matches(&host, port),
                            Some(_) => false,
                        }
                }
                _ => p.head == tool && p.arg.is_none(),
            };
            if hit {
                denied.push(p.as_str().to_owned());
            }
        }
        denied
    }

    /// The deny patterns that match a call the tool asks no permission for.
    pub fn denied_unasked(&self, tool: &str, call: Unasked<'_>, cwd: &Path) -> Vec<String> {
        let cwd_only = [PathBuf::from(".")];
        // Every name of each path, read once and only when a path rule needs them.
        let names = std::cell::OnceCell::new();
        let names = |paths: &[PathBuf]| {
            names.get_or_init(|| {
                paths
                    .iter()
                    .map(|path| paths::names_of(path, cwd))
                    .collect::<Vec<_>>()
            })
        };
        self.deny
            .iter()
            .filter(|p| match call {
                // A client tool may also take a built-in's name (it replaces the built-in).
                Unasked::Client => {
                    (p.head == tool && p.arg.is_none())
                        || p.family == Family::Client
                            && match &p.arg {
                                None => true,
                                Some(PatternArg::Name(n)) => n == tool,
                                Some(_) => false,
                            }
                }
                Unasked::Builtin(paths) => {
                    let family = family_of(tool).unwrap_or(Family::Plain);
                    let paths = if paths.is_empty() {
                        &cwd_only[..]
                    } else {
                        paths
                    };
                    p.covers(tool, family)
                        && match &p.arg {
                            None => true,
                            // A directory's listing or search reaches what is under it.
                            // By every name of the path (a symlink into the denied tree; a
                            // file with other hard links is denied by every path deny).
                            Some(PatternArg::Path(g)) => names(paths).iter().any(|names| {
                                names.linked
                                    || names.names.iter().any(|n| g.may_match_under(n, cwd))
                            }),
                            Some(_) => false,
                        }
                }
            })
            .map(|p| p.as_str().to_owned())
            .collect()
    }

    /// Whether allow rules approve a shell command; else the patterns that would.
    fn allow_shell(
        &self,
        tool: &str,
        analysis: &ShellAnalysis,
        cwd: &Path,
    ) -> (bool, Vec<String>, Vec<String>) {
        let shell_rules: Vec<&ToolPattern> = self
            .allow
            .iter()
            .filter(|p| p.covers(tool, Family::Shell))
            .collect();
        if shell_rules.iter().any(|p| p.arg.is_none()) {
            return (true, Vec::new(), Vec::new());
        }
        if !analysis.is_resolved() {
            return (false, Vec::new(), analysis.unresolved.clone());
        }
        let mut missing = Vec::new();
        let mut seen = std::collections::HashSet::new();
        let mut add = |hint: String, missing: &mut Vec<String>| {
            if seen.insert(hint.clone()) {
                missing.push(hint);
            }
        };
        for cmd in &analysis.commands {
            let ok = shell_rules.iter().any(|p| match &p.arg {
                Some(PatternArg::Words(w)) => shell_rules::allows(w, cmd),
                _ => false,
            });
            if !ok {
                add(format!("shell({})", cmd.name), &mut missing);
            }
        }
        let base_moves = moves_directory(analysis);
        for target in &analysis.writes {
            let known = target.is_static() && (!base_moves || target.value.starts_with('/'));
            let ok = known
                && self.allow.iter().any(|p| {
                    p.covers("", Family::Write)
                        && match &p.arg {
                            None => true,
                            Some(PatternArg::Path(g)) => g.matches(Path::new(&target.value), cwd),
                            Some(_) => false,
                        }
                });
            if !ok {
                let path = paths::display_relative(Path::new(&target.value), cwd);
                add(format!("write({path})"), &mut missing);
            }
        }
        let approved = missing.is_empty() && !shell_rules.is_empty();
        (approved, missing, Vec::new())
    }
}

/// The family a call belongs to: its tool's, else its permission kind's.
fn family_of_ask(tool: &str, ask: &PermissionAsk) -> Family {
    match &ask.kind {
        PermissionKind::Shell => Family::Shell,
        PermissionKind::Write => Family::Write,
        PermissionKind::Read => Family::Read,
        PermissionKind::Url => Family::Url,
        PermissionKind::Other(kind) if kind == MCP_KIND => Family::Mcp,
        PermissionKind::Other(_) => family_of(tool).unwrap_or(Family::Plain),
    }
}

/// The host (lower case) and port of a URL a fetch asks for; an unparsable one matches no
/// host pattern.
fn url_host(url: &str) -> (String, u16) {
    match url::Url::parse(url) {
        Ok(u) => (
            u.host_str().unwrap_or_default().to_ascii_lowercase(),
            u.port_or_known_default().unwrap_or(0),
        ),
        Err(_) => (String::new(), 0),
    }
}

/// The server of an MCP call's request (`serverName`; its tool is the ask's subject).
fn mcp_server(ask: &PermissionAsk) -> &str {
    ask.request
        .get("serverName")
        .and_then(serde_json::Value::as_str)
        .unwrap_or_default()
}

/// Whether a pattern names this MCP server (and, when narrowed, exactly this tool of it).
fn mcp_covers(p: &ToolPattern, server: &str, tool: &str) -> bool {
    p.family == Family::Mcp
        && !server.is_empty()
        && p.head == server
        && match &p.arg {
            None => true,
            Some(PatternArg::Name(name)) => name == tool,
            Some(_) => false,
        }
}

/// Whether the line changes directory, so relative redirect targets have an unknown base.
fn moves_directory(analysis: &ShellAnalysis) -> bool {
    analysis
        .commands
        .iter()
        .any(|c| matches!(c.name.as_str(), "cd" | "pushd" | "popd"))
}

/// Whether a deny pattern covers a shell command line.
fn denies_shell(p: &ToolPattern, tool: &str, analysis: &ShellAnalysis, cwd: &Path) -> bool {
    if p.covers(tool, Family::Shell) {
        return match &p.arg {
            None => true,
            // What cannot be resolved could be anything, the denied command included.
            Some(PatternArg::Words(w)) => {
                !analysis.is_resolved()
                    || analysis.commands.iter().any(|c| shell_rules::denies(w, c))
            }
            Some(_) => false,
        };
    }
    if p.family == Family::Write && (p.head == "write") {
        let base_moves = moves_directory(analysis);
        return analysis.writes.iter().any(|t| {
            let unknown = !t.is_static() || (base_moves && !t.value.starts_with('/'));
            match &p.arg {
                None => true,
                Some(PatternArg::Path(g)) => unknown || g.matches(Path::new(&t.value), cwd),
                Some(_) => false,
            }
        });
    }
    false
}

#[cfg(test)]
mod tests;
