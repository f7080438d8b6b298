//! The Responses API and Anthropic Messages wires, in the published shapes.

use crate::common;

use common::*;
use serde_json::{Value, json};
use turnstile_scripted_model::{Script, ScriptedResponse, ScriptedServer};

impl Reply {
    /// The `(event, data)` pairs of an SSE body whose events are named.
    fn named_events(&self) -> Vec<(String, Value)> {
        let text = String::from_utf8(self.body.clone()).unwrap();
        text.split("\n\n")
            .filter(|e| !e.is_empty())
            .map(|e| {
                let (event, data) = e.split_once('\n').expect("an event and a data line");
                let name = event.strip_prefix("event: ").expect("an event line");
                let data = data.strip_prefix("data: ").expect("a data line");
                let data: Value = serde_json::from_str(data).unwrap();
                assert_eq!(data["type"], name, "the event names its data's type");
                (name.to_string(), data)
            })
            .collect()
    }
}

fn glob_then_text() -> Script {
    Script::new()
        .respond(ScriptedResponse::text("Looking.").and_tool_call_with_id(
            "call_9",
            "glob",
            json!({"pattern": "*.txt"}),
        ))
        .respond(ScriptedResponse::text("Two files.").with_usage(12, 3))
}

#[tokio::test]
async fn responses_stream_and_whole_in_the_published_shapes() {
    let server = ScriptedServer::start(glob_then_text()).await.unwrap();
    let reply = post(
        server.addr(),
        "/v1/responses",
        &json!({"model": "gpt-5", "input": "hi", "stream": true}),
    )
    .await;
    assert_eq!(reply.status, 200);
    assert!(reply.complete);
    let events = reply.named_events();
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names.first(), Some(&"response.created"));
    assert_eq!(names.last(), Some(&"response.completed"));
    for expected in [
        "response.output_item.added",
        "response.output_text.delta",
        "response.function_call_arguments.delta",
        "response.output_item.done",
    ] {
        assert!(names.contains(&expected), "{names:?}");
    }
    let seqs: Vec<u64> = events
        .iter()
        .map(|(_, d)| d["sequence_number"].as_u64().unwrap())
        .collect();
    assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1));
    let done = &events.last().unwrap().1["response"];
    assert_eq!(done["status"], "completed");
    assert_eq!(done["output"][0]["type"], "message");
    assert_eq!(done["output"][0]["content"][0]["text"], "Looking.");
    assert_eq!(
        done["output"][1],
        json!({"type": "function_call", "id": "fc_1_0_0", "call_id": "call_9", "name": "glob",
               "arguments": "{\"pattern\":\"*.txt\"}", "status": "completed"})
    );
    let whole = post(
        server.addr(),
        "/responses",
        &json!({"model": "gpt-5", "input": "hi"}),
    )
    .await
    .json();
    assert_eq!(whole["object"], "response");
    assert_eq!(whole["output"][0]["content"][0]["text"], "Two files.");
    assert_eq!(
        (
            whole["usage"]["input_tokens"].as_u64(),
            whole["usage"]["output_tokens"].as_u64()
        ),
        (Some(12), Some(3))
    );
}

#[tokio::test]
async fn anthropic_stream_and_whole_in_the_published_shapes() {
    let server = ScriptedServer::start(glob_then_text()).await.unwrap();
    let reply = post(
        server.addr(),
        "/v1/messages",
        &json!({"model": "claude", "max_tokens": 10, "messages": [], "stream": true}),
    )
    .await;
    assert_eq!(reply.status, 200);
    let events = reply.named_events();
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "message_start",
            "ping",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "content_block_start",
            "content_block_delta",
            "content_block_delta",
            "content_block_delta",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop",
        ]
    );
    assert_eq!(
        events[5].1["content_block"],
        json!({"type": "tool_use", "id": "call_9", "name": "glob", "input": {}})
    );
    let json_text: String = events[6..10]
        .iter()
        .map(|(_, d)| d["delta"]["partial_json"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(json_text, r#"{"pattern":"*.txt"}"#);
    assert_eq!(events[11].1["delta"]["stop_reason"], "tool_use");
    let whole = post(
        server.addr(),
        "/v1/messages",
        &json!({"model": "claude", "max_tokens": 10, "messages": []}),
    )
    .await
    .json();
    assert_eq!(whole["type"], "message");
    assert_eq!(
        whole["content"],
        json!([{"type": "text", "text": "Two files."}])
    );
    assert_eq!(whole["stop_reason"], "end_turn");
    assert_eq!(whole["usage"]["input_tokens"], 12);
}

#[tokio::test]
async fn a_script_for_one_wire_refuses_the_others_and_errors_take_its_shape() {
    let server = ScriptedServer::start(
        Script::new()
            .wire(turnstile_scripted_model::Wire::Anthropic)
            .respond(ScriptedResponse {
                status: Some(529),
                ..ScriptedResponse::default()
            }),
    )
    .await
    .unwrap();
    let other = post(server.addr(), "/v1/chat/completions", &chat(false)).await;
    assert_eq!(other.status, 404);
    assert!(
        other.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("anthropic")
    );
    let overloaded = post(server.addr(), "/v1/messages", &json!({"messages": []})).await;
    assert_eq!(overloaded.status, 529);
    assert_eq!(overloaded.json()["type"], "error");
    assert_eq!(overloaded.json()["error"]["type"], "api_error");
}
