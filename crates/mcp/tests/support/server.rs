//! A real MCP server written with rmcp, for the tests: served on stdio by a test binary
//! without the libtest harness re-running itself (`TURNSTILE_TEST_MCP_SERVER=stdio`; the
//! harness would print on the protocol's stdout), or over streamable HTTP on 127.0.0.1 inside
//! the test process.
//!
//! Tools: `echo` (two text blocks), `fail` (an `isError` result), `crash` (the process
//! exits mid-call), `hang` (never answers), `pid` (the server's process id).

#![allow(dead_code)]

use std::sync::Arc;

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
        ];
        if self.can_exit {
            tools.push(Tool::new("crash", "Exits the server.", empty()));
        }
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.unwrap_or_default();
        let result = match request.name.as_ref() {
            "echo" => {
                let text = args.get("text").and_then(Value::as_str).unwrap_or_default();
                CallToolResult::success(vec![
                    ContentBlock::text(format!("echo: {text}")),
                    ContentBlock::text("second block"),
                ])
            }
            "fail" => CallToolResult::error(vec![ContentBlock::text("it failed on purpose")]),
            "pid" => {
                CallToolResult::success(vec![ContentBlock::text(std::process::id().to_string())])
            }
            "crash" if self.can_exit => std::process::exit(3),
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
        let server = TestServer { can_exit: true };
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
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
    };
    let config = StreamableHttpServerConfig::default();
    let service: StreamableHttpService<TestServer, LocalSessionManager> =
        StreamableHttpService::new(|| Ok(TestServer::default()), Default::default(), config);
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
