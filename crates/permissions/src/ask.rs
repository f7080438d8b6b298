//! What a tool call asks permission for: the family the policy sorts it into, the schema's
//! `permissionRequest` the client sees, and for a shell command its analysis. Tools build
//! these; the policy ([`crate::PermissionPolicy`], [`crate::LiveRules`]) decides them.

use serde_json::{Value, json};

use crate::shell::{self, ShellAnalysis};

/// The `permissionRequest.kind` of a tool of an MCP server.
pub const MCP_KIND: &str = "mcp";

/// What a tool call needs permission for (a tool returns `None` when it needs none, e.g. reads).
#[derive(Debug, Clone, PartialEq)]
pub struct PermissionAsk {
    /// The permission family, for allow/deny policies.
    pub kind: PermissionKind,
    /// The schema's `permissionRequest` object WITHOUT `toolCallId`; the loop adds it.
    pub request: Value,
    /// Human-readable description of what the call intends to do.
    pub intention: String,
    /// What `--allow-tool` style patterns match against: the shell command or the path.
    pub subject: String,
    /// For a shell command, what it runs and writes: the policy matches its rules on this.
    pub shell: Option<std::sync::Arc<ShellAnalysis>>,
}

/// The permission families the policy distinguishes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum PermissionKind {
    /// Running a shell command (`permissionRequest.kind` "shell").
    Shell,
    /// Writing a file (`permissionRequest.kind` "write").
    Write,
    /// Reading a file or directory (`permissionRequest.kind` "read").
    Read,
    /// Fetching a URL (`permissionRequest.kind` "url").
    Url,
    /// Any other kind, named as the schema names it (e.g. "custom-tool").
    Other(String),
}

impl PermissionKind {
    /// The schema's `permissionRequest.kind` discriminator for this family.
    pub fn as_str(&self) -> &str {
        match self {
            PermissionKind::Shell => "shell",
            PermissionKind::Write => "write",
            PermissionKind::Read => "read",
            PermissionKind::Url => "url",
            PermissionKind::Other(kind) => kind,
        }
    }
}

impl PermissionAsk {
    /// The request to run `command` in a shell (the `bash` tool's), with what it runs and
    /// writes analysed for the rules.
    pub fn shell(command: &str, intention: String) -> PermissionAsk {
        let analysis = shell::analyze(command);
        let request = shell_request(command, &intention, &analysis);
        PermissionAsk {
            kind: PermissionKind::Shell,
            request,
            intention,
            subject: command.to_owned(),
            shell: Some(std::sync::Arc::new(analysis)),
        }
    }
}

/// The schema's `PermissionRequestShell` (without `toolCallId`).
fn shell_request(command: &str, intention: &str, analysis: &ShellAnalysis) -> Value {
    // One entry per distinct command; it is read-only only if every use of it is.
    let mut commands: Vec<(String, bool)> = Vec::new();
    let mut index: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for segment in &analysis.segments {
        match index.get(segment.identifier.as_str()) {
            Some(&i) => commands[i].1 &= segment.read_only,
            None => {
                index.insert(&segment.identifier, commands.len());
                commands.push((segment.identifier.clone(), segment.read_only));
            }
        }
    }
    json!({
        "kind": "shell",
        "fullCommandText": command,
        "intention": intention,
        "commands": commands
            .iter()
            .map(|(identifier, read_only)| json!({"identifier": identifier, "readOnly": read_only}))
            .collect::<Vec<_>>(),
        "commandSegments": analysis
            .segments
            .iter()
            .map(|s| json!({"identifier": s.identifier, "fullCommandText": s.text}))
            .collect::<Vec<_>>(),
        "possiblePaths": analysis.redirect_paths(),
        "possibleUrls": analysis.urls.iter().map(|u| json!({"url": u})).collect::<Vec<_>>(),
        "hasWriteFileRedirection": analysis.write_redirection(),
        // Approving "this command for the session" needs something to name it by.
        "canOfferSessionApproval": !commands.is_empty(),
    })
}
