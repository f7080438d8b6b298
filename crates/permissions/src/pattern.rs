//! `--allow-tool` / `--deny-tool` patterns: parsing and validation against the names that
//! exist, so that a typo is an error at start-up instead of a rule that never matches.

use super::paths::PathGlob;
use crate::hosts::HostPattern;

/// The permission kinds a pattern may name.
pub const KINDS: [&str; 5] = ["shell", "write", "read", "url", "custom-tool"];

/// The built-in tools a pattern may name.
pub const BUILTIN_TOOLS: [&str; 16] = [
    "bash",
    "read_bash",
    "stop_bash",
    "list_bash",
    "view",
    "create",
    "edit",
    "web_fetch",
    "sql",
    "read_agent",
    "list_agents",
    "write_agent",
    "glob",
    "grep",
    "task",
    "task_complete",
];

/// What a built-in tool does, for its patterns' arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Family {
    /// Runs shell commands: arguments are command words.
    Shell,
    /// Writes files: arguments are path globs.
    Write,
    /// Reads files: arguments are path globs.
    Read,
    /// Fetches URLs: arguments are host patterns.
    Url,
    /// A tool an SDK client provides: the argument is its name.
    Client,
    /// The tools of an MCP server (the pattern's head is the server's name): the argument is
    /// the tool's own name on the server.
    Mcp,
    /// Takes no argument.
    Plain,
}

/// The family of a built-in tool or a kind.
pub(crate) fn family_of(name: &str) -> Option<Family> {
    Some(match name {
        "shell" | "bash" => Family::Shell,
        "write" | "create" | "edit" => Family::Write,
        "read" | "view" | "grep" | "glob" => Family::Read,
        "url" | "web_fetch" => Family::Url,
        "custom-tool" => Family::Client,
        "read_bash" | "stop_bash" | "list_bash" | "sql" | "read_agent" | "list_agents" | "task"
        | "task_complete" => Family::Plain,
        _ => return None,
    })
}

/// One `--allow-tool`/`--deny-tool` pattern.
#[derive(Debug, Clone)]
pub struct ToolPattern {
    text: String,
    /// A kind (`shell`, `write`, `read`, `custom-tool`) or a built-in tool name.
    pub(crate) head: String,
    pub(crate) family: Family,
    pub(crate) arg: Option<PatternArg>,
}

/// What narrows a pattern.
#[derive(Debug, Clone)]
pub(crate) enum PatternArg {
    /// `shell(git push)` / `shell(git push:*)`: the command's words begin with these.
    Words(Vec<String>),
    /// `write(src/**)`: paths matching this glob.
    Path(PathGlob),
    /// `custom-tool(deploy)`: the client tool of this name.
    Name(String),
    /// `url(example.com)`: fetches of this host (`--allow-url`, `--deny-url`).
    Host(HostPattern),
}

/// A pattern that could not be parsed.
#[derive(Debug, thiserror::Error)]
#[error(
    "invalid tool pattern {pattern:?}: {reason} (valid kinds: shell, shell(CMD), shell(CMD:*), write, write(GLOB), read, read(GLOB), url, url(HOST), custom-tool, custom-tool(NAME), SERVER, SERVER(TOOL) for an MCP server; valid tools: bash, read_bash, stop_bash, list_bash, view, create, edit, web_fetch, sql, glob, grep, task_complete)"
)]
pub struct PatternError {
    /// The pattern as given.
    pub pattern: String,
    /// What is wrong.
    pub reason: String,
}

impl ToolPattern {
    /// Parses and validates a pattern such as `shell(git:*)` or `write(src/**)`.
    pub fn parse(text: &str) -> Result<Self, PatternError> {
        Self::parse_with(text, &[])
    }

    /// Like [`Self::parse`], where the names of `mcp_servers` are heads too: `server` (every
    /// tool of the server) and `server(tool)` (one of them), as the Copilot CLI spells them.
    /// A kind or a built-in tool of the same name wins over a server.
    pub fn parse_with(text: &str, mcp_servers: &[String]) -> Result<Self, PatternError> {
        let err = |reason: String| PatternError {
            pattern: text.to_owned(),
            reason,
        };
        let trimmed = text.trim();
        let (head, arg) = match trimmed.split_once('(') {
            None => (trimmed, None),
            Some((head, rest)) => {
                let inner = rest
                    .strip_suffix(')')
                    .ok_or_else(|| err("missing closing parenthesis".into()))?;
                if inner.trim().is_empty() {
                    return Err(err("empty argument".into()));
                }
                (head.trim(), Some(inner.trim()))
            }
        };
        if head.is_empty() {
            return Err(err("expected a kind or a tool name".into()));
        }
        let family = family_of(head)
            .or_else(|| mcp_servers.iter().any(|s| s == head).then_some(Family::Mcp))
            .ok_or_else(|| {
                err(format!(
                    "unknown kind, tool or MCP server {head:?} (a tool an SDK client registers is matched as custom-tool({head}); an MCP server's name must be in the MCP configuration)"
                ))
            })?;
        let arg = match (family, arg) {
            (_, None) => None,
            (Family::Plain, Some(_)) => {
                return Err(err(format!("{head} takes no argument")));
            }
            (Family::Shell, Some(a)) => {
                let a = a.strip_suffix(":*").unwrap_or(a);
                let words: Vec<String> = a.split_whitespace().map(str::to_owned).collect();
                if words.is_empty() || words.iter().any(|w| w.contains(['(', ')', ':'])) {
                    return Err(err(
                        "expected command words, e.g. shell(git) or shell(git push:*)".into(),
                    ));
                }
                Some(PatternArg::Words(words))
            }
            (Family::Write | Family::Read, Some(a)) => {
                Some(PatternArg::Path(PathGlob::new(a).map_err(err)?))
            }
            (Family::Client | Family::Mcp, Some(a)) => Some(PatternArg::Name(a.to_owned())),
            (Family::Url, Some(a)) => Some(PatternArg::Host(
                HostPattern::parse(a).map_err(|e| err(e.reason))?,
            )),
        };
        Ok(ToolPattern {
            text: trimmed.to_owned(),
            head: head.to_owned(),
            family,
            arg,
        })
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether the pattern's head covers a call of `tool` (a kind covers its family's tools).
    pub(crate) fn covers(&self, tool: &str, family: Family) -> bool {
        self.head == tool || (KINDS.contains(&self.head.as_str()) && self.family == family)
    }
}
