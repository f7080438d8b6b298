//! A real MCP server written with rmcp, for the tests: served on stdio by a test binary
//! without the libtest harness re-running itself (`TURNSTILE_TEST_MCP_SERVER=stdio`; the
//! harness would print on the protocol's stdout), or over streamable HTTP on 127.0.0.1 inside
//! the test process.
//!
//! Tools: `echo` (two text blocks, and a third with the request's `_meta` when it carries
//! one besides a `progressToken`), `fail` (an `isError` result), `crash` (the process
//! exits mid-call), `hang` (never answers), `pid` (the server's process id), `grow` (adds the
//! tool `grown` and sends `notifications/tools/list_changed`).
//!
//! [`HostileServer`] is what a careless or hostile server may list: thousands of tools over
//! many pages (or pages without end), megabyte descriptions, a huge schema, a name over the
//! model APIs' 64 characters, and names that collide with another server's once prefixed.

#![allow(dead_code)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Map, Value, json};

/// The variable that makes the test binary serve MCP on stdio instead of running tests.
pub const SERVE_VAR: &str = "TURNSTILE_TEST_MCP_SERVER";

#[derive(Clone, Default)]
pub struct TestServer {
    /// `crash` exits the process (stdio); over HTTP it is not offered.
    pub can_exit: bool,
    /// `grow` was called: `grown` is listed.
    pub grown: Arc<AtomicBool>,
}

fn schema(value: Value) -> Arc<Map<String, Value>> {
    match value {
        Value::Object(map) => Arc::new(map),
        _ => Arc::new(Map::new()),
    }
}

impl ServerHandler for TestServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let empty = || schema(json!({"type": "object", "properties": {}}));
        let mut tools = vec![
            Tool::new(
                "echo",
                "Echoes the text back.",
                schema(json!({
                    "type": "object",
                    "properties": {"text": {"type": "string", "description": "what to echo"}},
                    "required": ["text"]
                })),
            ),
            Tool::new("fail", "Always fails.", empty()),
            Tool::new("hang", "Never answers.", empty()),
            Tool::new("pid", "The server's process id.", empty()),
            Tool::new("grow", "Adds the tool `grown`.", empty()),
        ];
        if self.grown.load(Ordering::SeqCst) {
            tools.push(Tool::new("grown", "Listed after `grow`.", empty()));
        }
        if self.can_exit {
            tools.push(Tool::new("crash", "Exits the server.", empty()));
        }
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.unwrap_or_default();
        // rmcp moves the request's `_meta` into the context.
        let mut meta = request
            .meta
            .map(|m| m.0.0)
            .filter(|m| !m.is_empty())
            .unwrap_or_else(|| context.meta.0.0.clone());
        meta.remove("progressToken");
        let result = match request.name.as_ref() {
            "echo" => {
                let text = args.get("text").and_then(Value::as_str).unwrap_or_default();
                let mut blocks = vec![
                    ContentBlock::text(format!("echo: {text}")),
                    ContentBlock::text("second block"),
                ];
                if !meta.is_empty() {
                    blocks.push(ContentBlock::text(format!("meta: {}", Value::Object(meta))));
                }
                CallToolResult::success(blocks)
            }
            "fail" => CallToolResult::error(vec![ContentBlock::text("it failed on purpose")]),
            "pid" => {
                CallToolResult::success(vec![ContentBlock::text(std::process::id().to_string())])
            }
            "crash" if self.can_exit => std::process::exit(3),
            "grow" => {
                self.grown.store(true, Ordering::SeqCst);
                let _ = context.peer.notify_tool_list_changed().await;
                CallToolResult::success(vec![ContentBlock::text("grown")])
            }
            "grown" => CallToolResult::success(vec![ContentBlock::text("the new tool ran")]),
            "hang" => {
                std::future::pending::<()>().await;
                unreachable!("pending never resolves")
            }
            other => {
                return Err(ErrorData::invalid_params(format!("no tool {other}"), None));
            }
        };
        Ok(result.into())
    }
}

/// Serves MCP on stdio until the client goes away, when the test binary was started as the
/// server; returns otherwise.
pub fn serve_stdio_if_asked() {
    if std::env::var(SERVE_VAR).as_deref() != Ok("stdio") {
        return;
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let server = TestServer {
            can_exit: true,
            ..Default::default()
        };
        if let Ok(running) = server.serve(rmcp::transport::stdio()).await {
            let _ = running.waiting().await;
        }
    });
    std::process::exit(0);
}

/// The `mcpServers` entry that starts this test binary as the stdio server.
pub fn stdio_entry() -> Value {
    let exe = std::env::current_exe().expect("test binary path");
    json!({
        "type": "stdio",
        "command": exe,
        "args": [],
        "env": {SERVE_VAR: "stdio"},
        "tools": ["*"]
    })
}

/// A streamable HTTP MCP server on 127.0.0.1; its URL. Lives as long as the runtime.
pub async fn serve_http() -> String {
    serve_http_of(TestServer::default).await
}

/// A streamable HTTP server on 127.0.0.1 of the handlers `make` makes (one per client
/// session); its URL.
pub async fn serve_http_of<S: ServerHandler + Send + Sync + 'static>(
    make: impl Fn() -> S + Send + Sync + 'static,
) -> String {
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
    };
    let config = StreamableHttpServerConfig::default();
    let service: StreamableHttpService<S, LocalSessionManager> =
        StreamableHttpService::new(move || Ok(make()), Default::default(), config);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind 127.0.0.1");
    let addr = listener.local_addr().expect("address");
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let service = service.clone();
            tokio::spawn(async move {
                let io = hyper_util::rt::TokioIo::new(stream);
                let service = hyper_util::service::TowerToHyperService::new(service);
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(io, service)
                    .await;
            });
        }
    });
    format!("http://{addr}/mcp")
}

/// Tools per page of [`HostileServer`]'s list.
pub const HOSTILE_PAGE: usize = 1000;
/// Tools [`HostileServer`] lists in all (when its pages end).
pub const HOSTILE_TOOLS: usize = 10_000;

/// A server listing what no runtime should take whole (see the module doc). Its first page
/// holds, besides `t00000...`: `b-c` and `c` (as servers `h` and `h-b` they collide as
/// `h-b-c`), a tool with a 1 MB description, one with a schema over 100 KB, and one whose
/// name is 80 characters long; every 250th tool has a 1 MB description, the others 4 KB.
#[derive(Clone, Default)]
pub struct HostileServer {
    /// Pages never end: each has one tool and a next cursor.
    pub endless: bool,
    /// Every description is short (the tool cap applies before the byte budget).
    pub terse: bool,
    /// Who answers a call (its result is `<label> ran <tool>`).
    pub label: &'static str,
    /// `tools/list` requests served.
    pub pages_served: Arc<AtomicUsize>,
}

impl HostileServer {
    fn page(&self, index: usize) -> (Vec<Tool>, Option<String>) {
        let empty = || schema(json!({"type": "object", "properties": {}}));
        if self.endless {
            let tool = Tool::new(format!("e{index:06}"), "One more.", empty());
            return (vec![tool], Some((index + 1).to_string()));
        }
        let mut tools = Vec::new();
        if index == 0 {
            tools.push(Tool::new("b-c", "Collides as h-b-c.", empty()));
            tools.push(Tool::new(
                "c",
                "Collides as h-b-c from server h-b.",
                empty(),
            ));
            tools.push(Tool::new("huge-description", "d".repeat(1 << 20), empty()));
            let properties: Map<String, Value> = (0..4000)
                .map(|i| (format!("property_{i:05}"), json!({"type": "string"})))
                .collect();
            tools.push(Tool::new(
                "huge-schema",
                "A schema over 100 KB.",
                schema(json!({"type": "object", "properties": properties})),
            ));
            tools.push(Tool::new("l".repeat(80), "A long name.", empty()));
        }
        for i in index * HOSTILE_PAGE..(index + 1) * HOSTILE_PAGE {
            let description = if self.terse {
                format!("Tool {i}.")
            } else if i % 250 == 0 {
                "m".repeat(1 << 20)
            } else {
                format!("Tool {i}. {}", "p".repeat(4000))
            };
            tools.push(Tool::new(format!("t{i:05}"), description, empty()));
        }
        let next = ((index + 1) * HOSTILE_PAGE < HOSTILE_TOOLS).then(|| (index + 1).to_string());
        (tools, next)
    }
}

impl ServerHandler for HostileServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.pages_served.fetch_add(1, Ordering::SeqCst);
        let index = request
            .and_then(|r| r.cursor)
            .and_then(|c| c.parse::<usize>().ok())
            .unwrap_or(0);
        let (tools, next) = self.page(index);
        let mut result = ListToolsResult::with_all_items(tools);
        result.next_cursor = next;
        Ok(result)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let text = format!("{} ran {}", self.label, request.name);
        Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
    }
}
