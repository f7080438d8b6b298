//! A session never given an MCP server has no MCP host, and the methods that need one refuse
//! as the Copilot CLI 1.0.81-0 refuses them (its words, `-32603`), where a session with
//! servers answers them.

use crate::common;

use common::{TestServer, create};
use serde_json::json;
use turnstile_scripted_model::{Script, ScriptedServer};

#[tokio::test]
async fn the_methods_that_need_a_host_refuse_without_one() {
    let model = ScriptedServer::start(Script::new()).await.unwrap();
    let t = TestServer::start(|_| {}).await;
    let mut client = t.client().await;
    let id = create(&mut client, &model.url(), json!({})).await;
    let named = json!({"sessionId": id, "serverName": "missing-server"});
    for (method, why) in [
        ("session.mcp.enable", "No MCP host initialized"),
        ("session.mcp.disable", "No MCP host initialized"),
        ("session.mcp.listTools", "MCP host not initialized"),
        (
            "session.mcp.oauth.login",
            "MCP host is not available on this session",
        ),
    ] {
        let error = client.err(method, named.clone()).await;
        assert_eq!(
            error,
            json!({"code": -32603, "message": format!("Request {method} failed with message: {why}")}),
            "{method}"
        );
    }
    let error = client
        .err("session.mcp.reload", json!({"sessionId": id}))
        .await;
    assert_eq!(
        error["message"],
        "Request session.mcp.reload failed with message: MCP config reload not available"
    );
    t.stop().await;
}
