//! A hostile server's tool list (`support/server.rs`, [`server::HostileServer`] over
//! streamable HTTP on 127.0.0.1) is read under the caps of `turnstile_mcp`: pages are not
//! followed past the tool or page limit, descriptions are cut, a huge schema keeps its tool
//! out, and what one server adds to a model request stays under its budget. Each cap that
//! applied is named in the listing's notes. A list that changes is read again when asked.

use crate::server;

use std::sync::Arc;
use std::sync::atomic::Ordering;

use serde_json::{Value, json};
use server::{HOSTILE_PAGE, HostileServer};
use turnstile_mcp::{
    MAX_DESCRIPTION_BYTES, MAX_LIST_PAGES, MAX_SCHEMA_BYTES, MAX_SERVER_TOOL_BYTES, MAX_TOOLS,
    McpConnection, McpServers, ServerConfig, StartOptions,
};

fn config(name: &str, url: &str) -> ServerConfig {
    McpServers::from_value(&json!({name: {"type": "http", "url": url}}), "test")
        .expect("a valid entry")
        .servers
        .remove(0)
}

async fn start(server: HostileServer) -> (McpConnection, HostileServer) {
    let made = server.clone();
    let url = server::serve_http_of(move || made.clone()).await;
    let connection = McpConnection::start(&config("h", &url), &StartOptions::new("/tmp"))
        .await
        .expect("the hostile server starts");
    (connection, server)
}

fn cost(tool: &turnstile_mcp::McpToolInfo) -> usize {
    tool.name.len() + tool.description.len() + serde_json::to_vec(&tool.input_schema).unwrap().len()
}

#[tokio::test]
async fn ten_thousand_tools_with_megabyte_descriptions_are_read_under_the_caps() {
    let (c, server) = start(HostileServer {
        label: "h",
        ..Default::default()
    })
    .await;
    let listing = c.listing();
    // The budget is spent within the first page: no second page is asked for.
    assert_eq!(server.pages_served.load(Ordering::SeqCst), 1);
    assert!(listing.tools.len() <= MAX_TOOLS, "{}", listing.tools.len());
    let total: usize = listing.tools.iter().map(cost).sum();
    assert!(total <= MAX_SERVER_TOOL_BYTES, "{total} bytes");
    for tool in listing.tools.iter() {
        assert!(
            tool.description.len() <= MAX_DESCRIPTION_BYTES,
            "{}",
            tool.name
        );
        assert!(
            serde_json::to_vec(&tool.input_schema).unwrap().len() <= MAX_SCHEMA_BYTES,
            "{}",
            tool.name
        );
    }
    let names: Vec<&str> = listing.tools.iter().map(|t| t.name.as_str()).collect();
    assert!(
        !names.contains(&"huge-schema"),
        "a schema over the cap keeps its tool out"
    );
    let huge = listing.tools.iter().find(|t| t.name == "huge-description");
    assert_eq!(
        huge.map(|t| t.description.len()),
        Some(MAX_DESCRIPTION_BYTES)
    );
    assert!(names.contains(&"b-c") && names.contains(&"c"));
    let mut sorted = names.clone();
    sorted.sort_unstable();
    assert_eq!(names, sorted, "sorted by name");
    let notes = listing.notes.join("\n");
    for expected in [
        format!("input schema over {MAX_SCHEMA_BYTES} bytes"),
        format!("over {MAX_DESCRIPTION_BYTES} bytes are cut"),
        format!("more than {MAX_SERVER_TOOL_BYTES} bytes"),
    ] {
        assert!(notes.contains(&expected), "{expected:?} in {notes}");
    }
    assert!(
        listing
            .notes
            .iter()
            .all(|n| n.starts_with("MCP server 'h': "))
    );
    let answer = c
        .call("c", Value::Null, &Default::default())
        .await
        .expect("a call");
    assert_eq!(answer.text, "h ran c");
    c.stop().await;
}

#[tokio::test]
async fn thousands_of_small_tools_stop_at_the_tool_cap() {
    let (c, server) = start(HostileServer {
        terse: true,
        label: "h",
        ..Default::default()
    })
    .await;
    // The first page already holds more than the cap: no second page is asked for.
    const { assert!(HOSTILE_PAGE > MAX_TOOLS) };
    assert_eq!(server.pages_served.load(Ordering::SeqCst), 1);
    let listing = c.listing();
    assert_eq!(listing.tools.len(), MAX_TOOLS);
    assert_noted(&listing.notes, &format!("more than {MAX_TOOLS} tools"));
    c.stop().await;
}

#[tokio::test]
async fn a_tool_list_without_end_is_read_to_the_page_limit() {
    let (c, server) = start(HostileServer {
        endless: true,
        label: "h",
        ..Default::default()
    })
    .await;
    assert_eq!(server.pages_served.load(Ordering::SeqCst), MAX_LIST_PAGES);
    let listing = c.listing();
    assert_eq!(listing.tools.len(), MAX_LIST_PAGES);
    assert_noted(&listing.notes, &format!("past {MAX_LIST_PAGES} pages"));
    c.stop().await;
}

#[tokio::test]
async fn a_changed_tool_list_is_read_again() {
    let url = server::serve_http().await;
    let c = Arc::new(
        McpConnection::start(&config("demo", &url), &StartOptions::new("/tmp"))
            .await
            .expect("the test server starts"),
    );
    assert!(!c.tools_changed());
    assert_eq!(c.refresh_tools().await, Ok(false), "nothing to read again");
    let before = c.listing();
    assert!(!before.tools.iter().any(|t| t.name == "grown"));
    c.call("grow", Value::Null, &Default::default())
        .await
        .expect("grow");
    // The notification travels beside the answer: wait for it (a failure guard of 10 s).
    for _ in 0..200 {
        if c.tools_changed() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(c.tools_changed(), "tools/list_changed arrived");
    assert_eq!(c.refresh_tools().await, Ok(true));
    assert!(c.listing().tools.iter().any(|t| t.name == "grown"));
    assert!(!c.tools_changed());
    c.stop().await;
}

/// Asserts that one of a listing's notes says `what`.
fn assert_noted(notes: &[String], what: &str) {
    assert!(
        notes.iter().any(|n| n.contains(what)),
        "{what:?} not in {notes:?}"
    );
}
