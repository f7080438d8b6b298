//! MCP Apps (SEP-1865) over a connected server, for a client whose session has them
//! (`session.mcp.apps.*`): the tools a `ui://` view may call, as the server described them,
//! and a call's result as the server sent it, within [`MAX_APP_RESULT_BYTES`].

use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use crate::connection::McpConnection;
use crate::error::McpError;
use crate::listing::McpToolInfo;

/// The most bytes of a tool result (its JSON) an app call answers; a larger one is refused.
pub const MAX_APP_RESULT_BYTES: usize = 8 * 1024 * 1024;

/// A tool as the server described it: `name`, `title`, `description`, `inputSchema`, `_meta`
/// (each when it has one; within the listing's caps).
pub fn app_tool(tool: &McpToolInfo) -> Value {
    let mut out = Map::new();
    out.insert("name".into(), json!(tool.name));
    if let Some(title) = &tool.title {
        out.insert("title".into(), json!(title));
    }
    if !tool.description.is_empty() {
        out.insert("description".into(), json!(tool.description));
    }
    out.insert("inputSchema".into(), tool.input_schema.clone());
    if let Some(meta) = &tool.meta {
        out.insert("_meta".into(), meta.clone());
    }
    Value::Object(out)
}

impl McpConnection {
    /// Calls a tool for an app view and answers the server's `CallToolResult` as JSON.
    pub async fn call_for_app(
        &self,
        tool: &str,
        arguments: Value,
        cancel: &CancellationToken,
    ) -> Result<Value, McpError> {
        let result = self.call_result(tool, arguments, None, cancel).await?;
        let bytes = serde_json::to_vec(&result)
            .map_err(|e| McpError::Request(format!("tools/call answer: {e}")))?;
        if bytes.len() > MAX_APP_RESULT_BYTES {
            return Err(McpError::Request(format!(
                "tools/call answered {} bytes, over the {MAX_APP_RESULT_BYTES} turnstile accepts",
                bytes.len()
            )));
        }
        serde_json::from_slice(&bytes)
            .map_err(|e| McpError::Request(format!("tools/call answer: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(meta: Option<Value>) -> McpToolInfo {
        McpToolInfo {
            name: "show".into(),
            title: None,
            description: "Shows.".into(),
            input_schema: json!({"type": "object"}),
            read_only: false,
            meta,
        }
    }

    #[test]
    fn visibility_decides_who_may_call() {
        assert!(tool(None).callable_by_apps());
        assert!(tool(Some(json!({"ui": {"resourceUri": "ui://a"}}))).callable_by_apps());
        assert!(tool(Some(json!({"ui": {"visibility": ["app"]}}))).callable_by_apps());
        assert!(!tool(Some(json!({"ui": {"visibility": ["model"]}}))).callable_by_apps());
        assert!(!tool(Some(json!({"ui": {"visibility": []}}))).callable_by_apps());
    }

    #[test]
    fn a_tool_is_described_as_the_server_sent_it() {
        let meta = json!({"ui": {"resourceUri": "ui://a"}});
        assert_eq!(
            app_tool(&tool(Some(meta.clone()))),
            json!({"name": "show", "description": "Shows.", "inputSchema": {"type": "object"}, "_meta": meta})
        );
        let mut bare = tool(None);
        bare.description.clear();
        assert_eq!(
            app_tool(&bare),
            json!({"name": "show", "inputSchema": {"type": "object"}})
        );
    }
}
