//! A server's tool list, read page by page under caps: a hostile or careless server cannot
//! grow the engine's memory, nor every model request, without bound. What the caps left out
//! is said in [`ToolListing::notes`], for the session to warn about.

use rmcp::model::{PaginatedRequestParams, Tool};
use rmcp::service::{Peer, RoleClient};
use serde_json::Value;

use crate::config::ServerConfig;
use crate::error::McpError;

/// The most tools one server may offer; the list is not read past them.
pub const MAX_TOOLS: usize = 512;
/// The most pages of `tools/list` read (a cursor that never ends is cut here).
pub const MAX_LIST_PAGES: usize = 64;
/// A description longer than this is cut (at a character boundary) with a note.
pub const MAX_DESCRIPTION_BYTES: usize = 8 * 1024;
/// A tool whose input schema serializes longer than this is not offered.
pub const MAX_SCHEMA_BYTES: usize = 64 * 1024;
/// What all of one server's tools may add to a model request (names, descriptions and
/// schemas); the list is not read past the tool that would go over it.
pub const MAX_SERVER_TOOL_BYTES: usize = 256 * 1024;

/// One tool a server offers, as it described it (within the caps).
#[derive(Debug, Clone, PartialEq)]
pub struct McpToolInfo {
    /// The tool's own name on its server.
    pub name: String,
    /// Its title, if the server gave one.
    pub title: Option<String>,
    /// Its description (empty if none), at most [`MAX_DESCRIPTION_BYTES`].
    pub description: String,
    /// JSON Schema of its arguments, at most [`MAX_SCHEMA_BYTES`] serialized.
    pub input_schema: Value,
    /// The server says the tool only reads (`annotations.readOnlyHint`).
    pub read_only: bool,
    /// Its `_meta` as the server sent it (MCP Apps read `_meta.ui`, SEP-1865); dropped when
    /// its JSON is over [`MAX_SCHEMA_BYTES`].
    pub meta: Option<Value>,
}

impl McpToolInfo {
    /// Its `_meta.ui`: an MCP App view or visibility.
    pub fn ui(&self) -> Option<&Value> {
        self.meta.as_ref().and_then(|m| m.get("ui"))
    }

    /// Whether an MCP App view may call it: `_meta.ui.visibility` unset (the default
    /// `["model", "app"]`) or naming `"app"`.
    pub fn callable_by_apps(&self) -> bool {
        match self.ui().and_then(|ui| ui.get("visibility")) {
            Some(Value::Array(who)) => who.iter().any(|w| w == "app"),
            _ => true,
        }
    }
}

/// The tools kept from a listing, sorted by name, and what the caps left out.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolListing {
    /// The tools offered, sorted by name (the runtime's order), one per name.
    pub tools: Vec<McpToolInfo>,
    /// One line per cap that applied, naming the server; empty when none did.
    pub notes: Vec<String>,
}

/// What the caps did while reading, counted to write one note per cap.
#[derive(Default)]
struct Cut {
    descriptions: usize,
    schemas: usize,
    over_budget: bool,
    over_count: bool,
    over_pages: bool,
}

/// Reads the server's tools through every page, keeping those its configuration offers,
/// within the caps.
pub(crate) async fn list_tools(
    peer: &Peer<RoleClient>,
    config: &ServerConfig,
) -> Result<ToolListing, McpError> {
    let mut kept: Vec<McpToolInfo> = Vec::new();
    let mut cut = Cut::default();
    let mut budget = MAX_SERVER_TOOL_BYTES;
    let mut cursor: Option<String> = None;
    for page in 0.. {
        if page == MAX_LIST_PAGES {
            cut.over_pages = true;
            break;
        }
        let params = PaginatedRequestParams::default().with_cursor(cursor.take());
        let listed = peer
            .list_tools(Some(params))
            .await
            .map_err(|e| McpError::Initialize(format!("listing tools failed: {e}")))?;
        for tool in listed.tools {
            if kept.len() == MAX_TOOLS {
                cut.over_count = true;
                break;
            }
            if cut.over_budget {
                break;
            }
            if !config.offers(&tool.name) || kept.iter().any(|k| k.name == tool.name) {
                continue;
            }
            if let Some(info) = admit(tool, &mut cut, &mut budget) {
                kept.push(info);
            }
        }
        cursor = listed.next_cursor.filter(|c| !c.is_empty());
        if cursor.is_none() || cut.over_count || cut.over_budget {
            break;
        }
    }
    // The runtime offers a server's tools sorted by name.
    kept.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(ToolListing {
        notes: notes(&config.name, &cut, kept.len()),
        tools: kept,
    })
}

/// The tool as offered, or `None` when a cap keeps it out.
fn admit(tool: Tool, cut: &mut Cut, budget: &mut usize) -> Option<McpToolInfo> {
    let schema = Value::Object((*tool.input_schema).clone());
    let schema_bytes = serde_json::to_vec(&schema)
        .map(|b| b.len())
        .unwrap_or(usize::MAX);
    if schema_bytes > MAX_SCHEMA_BYTES {
        cut.schemas += 1;
        return None;
    }
    let mut description = tool.description.as_deref().unwrap_or_default().to_owned();
    if description.len() > MAX_DESCRIPTION_BYTES {
        let mut end = MAX_DESCRIPTION_BYTES;
        while !description.is_char_boundary(end) {
            end -= 1;
        }
        description.truncate(end);
        cut.descriptions += 1;
    }
    // `_meta` counts against the server's budget like the rest of what is kept.
    let meta = tool
        .meta
        .as_ref()
        .map(|m| Value::Object(m.0.clone()))
        .map(|m| (serde_json::to_vec(&m).map_or(usize::MAX, |b| b.len()), m))
        .filter(|(bytes, _)| *bytes <= MAX_SCHEMA_BYTES);
    let meta_bytes = meta.as_ref().map_or(0, |(bytes, _)| *bytes);
    let meta = meta.map(|(_, m)| m);
    let cost = tool.name.len() + description.len() + schema_bytes + meta_bytes;
    if cost > *budget {
        cut.over_budget = true;
        return None;
    }
    *budget -= cost;
    Some(McpToolInfo {
        meta,
        read_only: tool
            .annotations
            .as_ref()
            .and_then(|a| a.read_only_hint)
            .unwrap_or(false),
        title: tool.title,
        description,
        input_schema: schema,
        name: tool.name.into_owned(),
    })
}

fn notes(server: &str, cut: &Cut, kept: usize) -> Vec<String> {
    let mut notes = Vec::new();
    let mut say = |text: String| notes.push(format!("MCP server '{server}': {text}"));
    if cut.over_count {
        say(format!(
            "it lists more than {MAX_TOOLS} tools; only the first {MAX_TOOLS} are offered"
        ));
    }
    if cut.over_pages {
        say(format!(
            "its tool list goes on past {MAX_LIST_PAGES} pages; the rest is not read"
        ));
    }
    if cut.schemas > 0 {
        say(format!(
            "{} tool(s) with an input schema over {MAX_SCHEMA_BYTES} bytes are not offered",
            cut.schemas
        ));
    }
    if cut.descriptions > 0 {
        say(format!(
            "{} tool description(s) over {MAX_DESCRIPTION_BYTES} bytes are cut",
            cut.descriptions
        ));
    }
    if cut.over_budget {
        say(format!(
            "its tools would add more than {MAX_SERVER_TOOL_BYTES} bytes to every model request; {kept} of them are offered"
        ));
    }
    notes
}
