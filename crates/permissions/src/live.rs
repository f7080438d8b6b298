//! The permission rules a client changes while a session runs, on top of the start-up policy:
//! approve-all (`session.permissions.setApproveAll`), configured approved/denied rules
//! (`configure`), session-scoped rules (an `approve-for-session` answer, `modifyRules` with
//! scope `session`) and location-scoped ones (an `approve-for-location` answer, a location's
//! persisted approvals applied, `modifyRules` with scope `location`), and the approval of
//! every read or every URL fetch (`configure`, `urls.setUnrestrictedMode`).
//!
//! A rule is the runtime's `{kind, argument}`: `shell` + a command identifier, `write`,
//! `read`, `custom-tool` + a tool name, `url` + a domain, or another kind with no argument.
//! A shell request is covered only when every command it runs is (the identifiers its
//! analysis found, compared exactly), the line is fully resolved, and a file it writes is
//! covered by a `write` rule: an approval for `echo` never approves `echo $(rm -rf ~)` or
//! `echo x > ~/.bashrc`. Denied rules win over every approval.

use std::sync::{Mutex, MutexGuard, PoisonError};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::PermissionAsk;

/// A permission rule as the runtime names it: a kind and an optional argument.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PermissionRule {
    /// `shell`, `write`, `read`, `custom-tool`, `url`, `memory`, or an MCP server name.
    pub kind: String,
    /// The command identifier, tool name or domain; `None` covers the whole kind.
    pub argument: Option<String>,
}

impl PermissionRule {
    /// A rule of `kind` narrowed to `argument`.
    pub fn new(kind: &str, argument: Option<&str>) -> Self {
        PermissionRule {
            kind: kind.to_owned(),
            argument: argument.map(str::to_owned),
        }
    }

    /// The `pattern` form the denial text names (`shell(echo)`, `write`).
    pub fn display(&self) -> String {
        match &self.argument {
            Some(a) => format!("{}({a})", self.kind),
            None => self.kind.clone(),
        }
    }
}

/// Which set of remembered rules a change is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RuleScope {
    /// Until the session's engine stops.
    Session,
    /// The rules of the session's project location (persisted by the server).
    Location,
}

/// What the live rules say about one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LiveDecision {
    /// A denied rule matched (its display forms).
    Denied(Vec<String>),
    /// Approve-all or an approved rule covers it.
    Approved,
}

/// The rules of one session, shared by its engine and the server that changes them.
#[derive(Debug, Default)]
pub struct LiveRules {
    state: Mutex<LiveState>,
}

#[derive(Debug, Default, Clone)]
struct LiveState {
    /// `None`: the start-up policy's `--allow-all-tools` decides.
    approve_all: Option<bool>,
    /// `setRequired`: `Some(false)` when the client said it shows no prompts.
    prompts_wanted: Option<bool>,
    approve_reads: bool,
    /// `urls.setUnrestrictedMode`: every `url` request is approved unasked.
    approve_urls: bool,
    approved: Vec<PermissionRule>,
    denied: Vec<PermissionRule>,
    session: Vec<PermissionRule>,
    location: Vec<PermissionRule>,
}

impl LiveRules {
    fn lock(&self) -> MutexGuard<'_, LiveState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `setApproveAll` / `configure.approveAllToolPermissionRequests`.
    pub fn set_approve_all(&self, enabled: bool) {
        self.lock().approve_all = Some(enabled);
    }

    /// The approve-all override, if a client set one.
    pub fn approve_all(&self) -> Option<bool> {
        self.lock().approve_all
    }

    /// `setRequired`: whether the client shows permission prompts.
    pub fn set_prompts_wanted(&self, wanted: bool) {
        self.lock().prompts_wanted = Some(wanted);
    }

    /// What the client said with `setRequired`, if anything: `Some(false)` means nobody is
    /// asked (requests no rule decides are denied, as the Copilot CLI does).
    pub fn prompts_wanted(&self) -> Option<bool> {
        self.lock().prompts_wanted
    }

    /// `configure.approveAllReadPermissionRequests`.
    pub fn set_approve_reads(&self, enabled: bool) {
        self.lock().approve_reads = enabled;
    }

    /// `urls.setUnrestrictedMode`: approve every URL fetch without asking (deny rules still
    /// refuse, and `web_fetch` still blocks local addresses no `--allow-url` names).
    pub fn set_approve_urls(&self, enabled: bool) {
        self.lock().approve_urls = enabled;
    }

    /// `configure.rules`: replaces the configured approved and denied rules.
    pub fn set_rules(&self, approved: Vec<PermissionRule>, denied: Vec<PermissionRule>) {
        let mut state = self.lock();
        state.approved = dedup(approved);
        state.denied = dedup(denied);
    }

    /// Adds rules to a scope (a rule already there is not repeated).
    pub fn add(&self, scope: RuleScope, rules: &[PermissionRule]) {
        let mut state = self.lock();
        let list = scoped(&mut state, scope);
        for rule in rules {
            if !list.contains(rule) {
                list.push(rule.clone());
            }
        }
    }

    /// Removes rules from a scope.
    pub fn remove(&self, scope: RuleScope, rules: &[PermissionRule]) {
        scoped(&mut self.lock(), scope).retain(|r| !rules.contains(r));
    }

    /// Empties a scope.
    pub fn clear(&self, scope: RuleScope) {
        scoped(&mut self.lock(), scope).clear();
    }

    /// The rules of a scope, in the order they were added.
    pub fn rules(&self, scope: RuleScope) -> Vec<PermissionRule> {
        scoped(&mut self.lock(), scope).clone()
    }

    /// Remembers what an answer approved beyond the one request: `approved-for-session`
    /// adds its approval's rules to the session scope, `approved-for-location` to the location
    /// scope. Other answers (and approvals of an unknown shape) remember nothing.
    pub fn remember(&self, result: &Value) {
        let scope = match result.get("kind").and_then(Value::as_str) {
            Some("approved-for-session") => RuleScope::Session,
            Some("approved-for-location") => RuleScope::Location,
            _ => return,
        };
        if let Some(approval) = result.get("approval") {
            self.add(scope, &rules_of_approval(approval));
        }
    }

    /// Decides a request by the live rules; `None`: they say nothing (the start-up policy
    /// and then the client decide).
    pub fn decide(&self, ask: &PermissionAsk) -> Option<LiveDecision> {
        let state = self.lock();
        let denied: Vec<String> = state
            .denied
            .iter()
            .filter(|r| touches(r, ask))
            .map(PermissionRule::display)
            .collect();
        if !denied.is_empty() {
            return Some(LiveDecision::Denied(denied));
        }
        if state.approve_all == Some(true) {
            return Some(LiveDecision::Approved);
        }
        let kind = request_kind(ask);
        if (state.approve_reads && kind == "read") || (state.approve_urls && kind == "url") {
            return Some(LiveDecision::Approved);
        }
        let approved: Vec<&PermissionRule> = state
            .approved
            .iter()
            .chain(&state.session)
            .chain(&state.location)
            .collect();
        covered(&approved, ask).then_some(LiveDecision::Approved)
    }
}

fn scoped(state: &mut LiveState, scope: RuleScope) -> &mut Vec<PermissionRule> {
    match scope {
        RuleScope::Session => &mut state.session,
        RuleScope::Location => &mut state.location,
    }
}

fn dedup(rules: Vec<PermissionRule>) -> Vec<PermissionRule> {
    let mut out: Vec<PermissionRule> = Vec::with_capacity(rules.len());
    for rule in rules {
        if !out.contains(&rule) {
            out.push(rule);
        }
    }
    out
}

/// The rules an approval (`UserToolSessionApproval`) stands for, as the runtime lists them:
/// `commands` gives one `shell` rule per identifier, `custom-tool` one named rule, `mcp` a
/// rule of its server, the others their kind alone.
pub fn rules_of_approval(approval: &Value) -> Vec<PermissionRule> {
    let text = |key: &str| approval.get(key).and_then(Value::as_str);
    match text("kind") {
        Some("commands") => approval
            .get("commandIdentifiers")
            .and_then(Value::as_array)
            .map(|ids| {
                ids.iter()
                    .filter_map(Value::as_str)
                    .filter(|id| !id.trim().is_empty())
                    .map(|id| PermissionRule::new("shell", Some(id)))
                    .collect()
            })
            .unwrap_or_default(),
        Some("custom-tool") => text("toolName")
            .map(|name| vec![PermissionRule::new("custom-tool", Some(name))])
            .unwrap_or_default(),
        Some("mcp") => text("serverName")
            .map(|server| vec![PermissionRule::new(server, text("toolName"))])
            .unwrap_or_default(),
        Some(kind @ ("read" | "write" | "memory")) => vec![PermissionRule::new(kind, None)],
        _ => Vec::new(),
    }
}

/// Whether a rule names an MCP request's server (its `kind` is the server's name, as the
/// runtime writes it) and, when narrowed, its tool: the server's own name for it (the ask's
/// subject) or the name the model calls (`toolName`).
fn mcp_touches(rule: &PermissionRule, ask: &PermissionAsk) -> bool {
    let server = ask.request.get("serverName").and_then(Value::as_str);
    server.is_some_and(|s| !s.is_empty() && rule.kind == s)
        && match rule.argument.as_deref() {
            None => true,
            Some(tool) => {
                tool == ask.subject
                    || ask.request.get("toolName").and_then(Value::as_str) == Some(tool)
            }
        }
}

/// The request's `kind` as the schema names it.
fn request_kind(ask: &PermissionAsk) -> &str {
    ask.request
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// The one argument a non-shell request is matched on.
fn request_argument(ask: &PermissionAsk) -> Option<&str> {
    let key = match request_kind(ask) {
        "custom-tool" => "toolName",
        "url" => "url",
        _ => return None,
    };
    let value = ask.request.get(key).and_then(Value::as_str)?;
    Some(if key == "url" {
        domain_of(value)
    } else {
        value
    })
}

/// The host of a URL (`https://host:port/path` gives `host`).
fn domain_of(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let host = rest.split(['/', '?', '#']).next().unwrap_or(rest);
    let host = host.rsplit_once('@').map_or(host, |(_, h)| h);
    host.split(':').next().unwrap_or(host)
}

/// Whether `has` covers every command a shell request runs: each command as the request
/// names it (its identifier as written) and each command the analysis found through wrappers
/// (by name or as written), so approving `env` or `sudo` does not approve what they run. An
/// unresolved line is never covered.
fn shell_covered(ask: &PermissionAsk, has: &dyn Fn(&str) -> bool) -> bool {
    let Some(analysis) = ask.shell.as_deref() else {
        return false;
    };
    if !analysis.is_resolved() || analysis.segments.is_empty() {
        return false;
    }
    analysis.segments.iter().all(|s| has(&s.identifier))
        && analysis
            .commands
            .iter()
            .all(|c| has(&c.name) || has(&c.program))
}

/// Whether every part of the request is covered by `rules`.
fn covered(rules: &[&PermissionRule], ask: &PermissionAsk) -> bool {
    let has = |kind: &str, argument: Option<&str>| {
        rules
            .iter()
            .any(|r| r.kind == kind && (r.argument.is_none() || r.argument.as_deref() == argument))
    };
    match request_kind(ask) {
        "shell" => {
            let writes = ask.shell.as_deref().is_some_and(|a| !a.writes.is_empty());
            shell_covered(ask, &|id| has("shell", Some(id))) && (!writes || has("write", None))
        }
        kind @ ("custom-tool" | "url") => match request_argument(ask) {
            Some(argument) => has(kind, Some(argument)),
            None => false,
        },
        "mcp" => rules.iter().any(|r| mcp_touches(r, ask)),
        "" => false,
        kind => rules.iter().any(|r| r.kind == kind && r.argument.is_none()),
    }
}

/// Whether a denied rule touches the request: any command it runs (an unresolved line could
/// run anything, the denied command included), or its kind and argument.
fn touches(rule: &PermissionRule, ask: &PermissionAsk) -> bool {
    let kind = request_kind(ask);
    if kind == "shell" && rule.kind == "shell" {
        let Some(analysis) = ask.shell.as_deref() else {
            return true;
        };
        return match &rule.argument {
            None => true,
            Some(id) => {
                !analysis.is_resolved()
                    || analysis.segments.iter().any(|s| &s.identifier == id)
                    || analysis
                        .commands
                        .iter()
                        .any(|c| &c.name == id || &c.program == id)
            }
        };
    }
    if kind == "shell" && rule.kind == "write" {
        return ask.shell.as_deref().is_some_and(|a| !a.writes.is_empty());
    }
    if kind == "mcp" {
        return mcp_touches(rule, ask);
    }
    rule.kind == kind
        && match &rule.argument {
            None => true,
            Some(a) => request_argument(ask) == Some(a.as_str()),
        }
}

#[cfg(test)]
mod tests;
