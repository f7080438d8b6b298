//! A connected server's resources, for a client that asks (`session.mcp.resources.*`): one
//! page of resources or templates, one resource read, each within the call limit and within
//! caps, so that a careless server can make neither the engine's memory nor an answer grow
//! without bound.

use rmcp::model::{PaginatedRequestParams, ReadResourceRequestParams, ResourceContents};
use serde_json::Value;

use crate::connection::McpConnection;
use crate::error::McpError;

/// The most entries one page may hold (resources or templates); a longer page is refused.
pub const MAX_RESOURCES_PER_PAGE: usize = 1_000;

/// The most bytes of text and base64 blobs one read may return; a larger one is refused.
pub const MAX_RESOURCE_BYTES: usize = 8 * 1024 * 1024;

/// Which of the server's listings to read a page of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResourceListing {
    /// `resources/list`.
    Resources,
    /// `resources/templates/list`.
    Templates,
}

impl ResourceListing {
    /// The MCP method.
    pub fn method(self) -> &'static str {
        match self {
            ResourceListing::Resources => "resources/list",
            ResourceListing::Templates => "resources/templates/list",
        }
    }
}

impl McpConnection {
    /// One page of the server's resources or templates as the server sent it (the MCP
    /// result's JSON: `resources` or `resourceTemplates`, and `nextCursor` when there is more).
    pub async fn list_resources(
        &self,
        which: ResourceListing,
        cursor: Option<String>,
    ) -> Result<Value, McpError> {
        if self.is_closed() {
            return Err(McpError::Closed);
        }
        let (peer, limit) = self.requests();
        let params = Some(PaginatedRequestParams::default().with_cursor(cursor));
        let (page, entries) = match which {
            ResourceListing::Resources => {
                let page = tokio::time::timeout(limit, peer.list_resources(params))
                    .await
                    .map_err(|_| McpError::CallTimeout(limit))?
                    .map_err(|e| self.classify(e))?;
                let entries = page.resources.len();
                (serde_json::to_value(page), entries)
            }
            ResourceListing::Templates => {
                let page = tokio::time::timeout(limit, peer.list_resource_templates(params))
                    .await
                    .map_err(|_| McpError::CallTimeout(limit))?
                    .map_err(|e| self.classify(e))?;
                let entries = page.resource_templates.len();
                (serde_json::to_value(page), entries)
            }
        };
        if entries > MAX_RESOURCES_PER_PAGE {
            return Err(McpError::Request(format!(
                "{} answered {entries} entries in one page, over the {MAX_RESOURCES_PER_PAGE} turnstile accepts",
                which.method()
            )));
        }
        page.map_err(|e| McpError::Request(format!("{} answer: {e}", which.method())))
    }

    /// Reads one resource (the MCP result's JSON: `contents`, each with its `uri` and `text`
    /// or base64 `blob`).
    pub async fn read_resource(&self, uri: &str) -> Result<Value, McpError> {
        if self.is_closed() {
            return Err(McpError::Closed);
        }
        let (peer, limit) = self.requests();
        let read = tokio::time::timeout(
            limit,
            peer.read_resource(ReadResourceRequestParams::new(uri)),
        )
        .await
        .map_err(|_| McpError::CallTimeout(limit))?
        .map_err(|e| self.classify(e))?;
        let bytes: usize = read
            .contents
            .iter()
            .map(|c| match c {
                ResourceContents::TextResourceContents { text, .. } => text.len(),
                ResourceContents::BlobResourceContents { blob, .. } => blob.len(),
                // A kind of content this rmcp does not know: its JSON counts.
                other => serde_json::to_string(other).map_or(0, |t| t.len()),
            })
            .sum();
        if bytes > MAX_RESOURCE_BYTES {
            return Err(McpError::Request(format!(
                "resources/read answered {bytes} bytes, over the {MAX_RESOURCE_BYTES} turnstile accepts"
            )));
        }
        serde_json::to_value(read)
            .map_err(|e| McpError::Request(format!("resources/read answer: {e}")))
    }
}
