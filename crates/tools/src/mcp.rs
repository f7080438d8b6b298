//! Tools from MCP servers, offered as the runtime offers them: named `server-tool` (cut to
//! the model APIs' 64 characters), after the built-ins, each server's tools sorted by name,
//! the server's description and schema as given (within `turnstile_mcp`'s caps). A call asks
//! permission of kind `mcp`; a server that failed, hangs or died is a tool failure naming the
//! server (`MCP server 'name': ...`), never a stuck call.

use std::sync::Arc;

use serde_json::{Value, json};
use turnstile_mcp::{McpConnection, McpError, McpHost, McpToolInfo};

use super::{
    BoxFuture, PermissionAsk, PermissionKind, Tool, ToolContext, ToolFailure, ToolOutput,
    ToolRegistry, ToolSpec,
};

/// `error.code` of a call whose server is gone (exited, closed the connection, stopped): the
/// loop records a `session.warning` for it.
pub const SERVER_GONE_CODE: &str = "mcp_server_gone";

pub use turnstile_permissions::MCP_KIND;

/// The longest function name the model APIs accept; the runtime cuts longer names here.
pub const MAX_TOOL_NAME: usize = 64;

/// The name the model calls a server's tool by (the runtime's `server-tool`), with what the
/// model APIs refuse in a function name replaced by `_`, cut to [`MAX_TOOL_NAME`] characters
/// as the runtime cuts it.
pub fn tool_name(server: &str, tool: &str) -> String {
    format!("{server}-{tool}")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(MAX_TOOL_NAME)
        .collect()
}

/// One tool of one connected server.
pub struct McpTool {
    name: String,
    server: String,
    info: McpToolInfo,
    connection: Arc<McpConnection>,
}

impl McpTool {
    /// The tool `info` of the server behind `connection`.
    pub fn new(connection: Arc<McpConnection>, info: McpToolInfo) -> Self {
        McpTool {
            name: tool_name(connection.name(), &info.name),
            server: connection.name().to_owned(),
            info,
            connection,
        }
    }

    fn failure(&self, error: &McpError) -> ToolFailure {
        let code = match error {
            McpError::Closed | McpError::NotConnected(_) => SERVER_GONE_CODE,
            McpError::CallTimeout(_) => "timeout",
            _ => "failure",
        };
        ToolFailure::new(format!("MCP server '{}': {error}", self.server), code)
    }
}

/// `base` (the built-ins) with the tools of every connected server of `host` after it, and
/// a warning for each thing the session should say about them: what a server's listing
/// left out (`turnstile_mcp::ToolListing::notes`), a name cut to [`MAX_TOOL_NAME`], and two
/// tools under one name. Of two MCP tools with one name the later server's is offered (the
/// runtime offers both and calls the later one); a name taken by `base` keeps its tool.
pub fn with_mcp_tools(base: &ToolRegistry, host: &McpHost) -> (ToolRegistry, Vec<String>) {
    let mut registry = base.clone();
    let mut warnings = Vec::new();
    let mut offered: Vec<(String, String)> = Vec::new();
    for server in host.servers() {
        let Some(connection) = server.connection else {
            continue;
        };
        let listing = connection.listing();
        warnings.extend(listing.notes.iter().cloned());
        for info in &listing.tools {
            let tool = McpTool::new(Arc::clone(&connection), info.clone());
            let full = format!("{}-{}", tool.server, info.name);
            if full.chars().count() > MAX_TOOL_NAME {
                warnings.push(format!(
                    "MCP server '{}': the tool name {full:?} is longer than {MAX_TOOL_NAME} characters; it is offered as {:?}",
                    tool.server, tool.name
                ));
            }
            let origin = format!("tool '{}' of MCP server '{}'", info.name, tool.server);
            if let Some((_, earlier)) = offered.iter().find(|(name, _)| *name == tool.name) {
                warnings.push(format!(
                    "{earlier} and {origin} are both named {:?}; the model is offered the second",
                    tool.name
                ));
            } else if registry.get(&tool.name).is_some() {
                warnings.push(format!(
                    "MCP tool {full:?} is not offered: the name {:?} is taken by another tool",
                    tool.name
                ));
                continue;
            }
            offered.retain(|(name, _)| *name != tool.name);
            offered.push((tool.name.clone(), origin));
            registry.register_shared(Arc::new(tool));
        }
    }
    (registry, warnings)
}

impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn spec(&self) -> ToolSpec {
        let parameters = if self.info.input_schema.is_object() {
            self.info.input_schema.clone()
        } else {
            json!({"type": "object", "properties": {}})
        };
        ToolSpec {
            name: self.name.clone(),
            description: self.info.description.clone(),
            parameters,
            skip_permission: false,
        }
    }

    fn permission(
        &self,
        args: &Value,
        _ctx: &ToolContext,
    ) -> Result<Option<PermissionAsk>, ToolFailure> {
        let title = self.title();
        Ok(Some(PermissionAsk {
            kind: PermissionKind::Other(MCP_KIND.into()),
            // The runtime's request: the full name as toolName, the server's own as title.
            request: json!({
                "kind": MCP_KIND,
                "serverName": self.server,
                "toolName": self.name,
                "toolTitle": title,
                "args": args,
                "readOnly": self.info.read_only,
            }),
            intention: format!(
                "Call the tool {} of the MCP server {}",
                self.info.name, self.server
            ),
            subject: self.info.name.clone(),
            shell: None,
        }))
    }

    fn run<'a>(
        &'a self,
        args: Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolFailure>> {
        Box::pin(async move {
            if ctx.cancel.is_cancelled() {
                return Err(ToolFailure::cancelled());
            }
            let outcome = match self
                .connection
                .call_with_meta(&self.info.name, args, ctx.mcp_meta.clone(), &ctx.cancel)
                .await
            {
                Ok(outcome) => outcome,
                Err(_) if ctx.cancel.is_cancelled() => return Err(ToolFailure::cancelled()),
                Err(e) => return Err(self.failure(&e)),
            };
            if outcome.is_error {
                return Err(ToolFailure::new(
                    format!("MCP server '{}': {}", self.server, outcome.text),
                    "failure",
                ));
            }
            // The server's blocks go to live subscribers only, as the runtime sends them.
            let live = (!outcome.contents.is_empty()).then_some(outcome.contents);
            Ok(ToolOutput {
                detailed_content: Some(outcome.text.clone()),
                content: outcome.text,
                live_contents: live,
                ..ToolOutput::default()
            })
        })
    }

    fn tool_title(&self) -> Option<&str> {
        Some(self.title())
    }

    fn mcp_origin(&self) -> Option<(&str, &str)> {
        Some((&self.server, &self.info.name))
    }
}

impl McpTool {
    /// The title the runtime shows: the server's title for the tool, else its own name.
    pub fn title(&self) -> &str {
        self.info.title.as_deref().unwrap_or(&self.info.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_server_dash_tool_and_safe_for_model_apis() {
        assert_eq!(tool_name("demo", "echo"), "demo-echo");
        assert_eq!(tool_name("my.server", "get file"), "my_server-get_file");
        assert_eq!(tool_name("a/b", "ü"), "a_b-_");
    }

    #[test]
    fn names_are_cut_to_64_characters_as_the_runtime_cuts_them() {
        let long = "x".repeat(70);
        let name = tool_name("changing", &long);
        assert_eq!(name.len(), 64);
        assert_eq!(name, format!("changing-{}", "x".repeat(55)));
        // Replaced characters count as one each.
        assert_eq!(tool_name("s", &"ü".repeat(80)).chars().count(), 64);
    }
}
