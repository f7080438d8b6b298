//! The scripted server, checked with a raw HTTP client (tests of the engine depend on it).

use crate::common;

use std::time::Duration;

use common::*;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use turnstile_scripted_model::{Script, ScriptedResponse, ScriptedServer, ServerOptions};

#[tokio::test]
async fn streams_text_word_by_word_with_usage_and_done() {
    let server = ScriptedServer::start(
        Script::new().respond(ScriptedResponse::text("There are 3 files.").with_usage(1001, 20)),
    )
    .await
    .unwrap();
    let reply = post(server.addr(), "/v1/chat/completions", &chat(true)).await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.header("content-type"), Some("text/event-stream"));
    assert!(reply.complete);
    let events = reply.events();
    assert_eq!(events.last().unwrap(), "[DONE]");
    let chunks = chunks(&events);
    for c in &chunks {
        assert_eq!(c["object"], "chat.completion.chunk");
        assert_eq!(c["id"], "chatcmpl-1");
        assert_eq!(c["model"], "gpt-test");
    }
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
    let pieces: Vec<&str> = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .filter(|s| !s.is_empty())
        .collect();
    assert_eq!(pieces, vec!["There", " are", " 3", " files."]);
    let finish = &chunks[chunks.len() - 2];
    assert_eq!(finish["choices"][0]["finish_reason"], "stop");
    let usage = chunks.last().unwrap();
    assert_eq!(usage["choices"], json!([]));
    assert_eq!(
        usage["usage"],
        json!({"prompt_tokens": 1001, "completion_tokens": 20, "total_tokens": 1021})
    );
}

#[tokio::test]
async fn streams_tool_calls_split_over_deltas_with_deterministic_ids() {
    let server = ScriptedServer::start(
        Script::new().respond(
            ScriptedResponse::tool_call("glob", json!({"pattern": "*.txt"}))
                .and_tool_call("view", json!({"path": "/home/dev/project/alpha.txt"})),
        ),
    )
    .await
    .unwrap();
    let mut request = chat(true);
    request.as_object_mut().unwrap().remove("stream_options");
    let reply = post(server.addr(), "/chat/completions", &request).await;
    let chunks = chunks(&reply.events());
    let mut calls: Vec<(String, String, String, usize)> = Vec::new();
    for c in &chunks {
        assert!(c.get("usage").is_none(), "no usage chunk unless asked");
        if let Some(deltas) = c["choices"][0]["delta"]["tool_calls"].as_array() {
            assert_eq!(deltas.len(), 1);
            let d = &deltas[0];
            let i = d["index"].as_u64().unwrap() as usize;
            if let Some(id) = d["id"].as_str() {
                assert_eq!(i, calls.len(), "ids arrive in the first delta of a call");
                let name = d["function"]["name"].as_str().unwrap().to_string();
                calls.push((id.to_string(), name, String::new(), 0));
            } else {
                assert!(d.get("function").unwrap().get("name").is_none());
                let call = &mut calls[i];
                call.2 += d["function"]["arguments"].as_str().unwrap();
                call.3 += 1;
            }
        }
    }
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].0, "call_1");
    assert_eq!(calls[0].1, "glob");
    assert_eq!(calls[0].2, r#"{"pattern":"*.txt"}"#);
    assert!(calls[0].3 >= 2, "arguments over several deltas");
    assert_eq!(calls[1].0, "call_2");
    assert_eq!(calls[1].1, "view");
    assert_eq!(
        serde_json::from_str::<Value>(&calls[1].2).unwrap(),
        json!({"path": "/home/dev/project/alpha.txt"})
    );
    assert!(calls[1].3 >= 2);
    assert_eq!(
        chunks.last().unwrap()["choices"][0]["finish_reason"],
        "tool_calls"
    );
}

#[tokio::test]
async fn answers_whole_when_not_streaming() {
    let server = ScriptedServer::start(
        Script::new()
            .model("scripted-x")
            .tool_call("glob", json!({"pattern": "*.txt"}))
            .text("done"),
    )
    .await
    .unwrap();
    let mut request = chat(false);
    request.as_object_mut().unwrap().remove("model");
    let first = post(server.addr(), "/v1/chat/completions", &request).await;
    assert_eq!(first.status, 200);
    assert_eq!(first.header("content-type"), Some("application/json"));
    let body = first.json();
    assert_eq!(body["object"], "chat.completion");
    assert_eq!(body["model"], "scripted-x");
    let choice = &body["choices"][0];
    assert_eq!(choice["finish_reason"], "tool_calls");
    assert_eq!(choice["message"]["content"], Value::Null);
    assert_eq!(
        choice["message"]["tool_calls"],
        json!([{"id": "call_1", "type": "function", "function": {"name": "glob", "arguments": "{\"pattern\":\"*.txt\"}"}}])
    );
    assert!(body["usage"]["prompt_tokens"].as_u64().unwrap() > 0);

    let second = post(server.addr(), "/v1/chat/completions", &request)
        .await
        .json();
    assert_eq!(second["id"], "chatcmpl-2");
    assert_eq!(second["choices"][0]["message"]["content"], "done");
    assert!(second["choices"][0]["message"].get("tool_calls").is_none());
    assert_eq!(second["choices"][0]["finish_reason"], "stop");
}

#[tokio::test]
async fn summary_requests_get_the_summaries_in_turn_and_leave_the_responses_in_order() {
    let server = ScriptedServer::start(
        Script::new()
            .text("first")
            .text("second")
            .summary(ScriptedResponse::text("<overview>one</overview>"))
            .summary(ScriptedResponse::text("<overview>two</overview>")),
    )
    .await
    .unwrap();
    let summary_request = json!({
        "model": "gpt-test",
        "messages": [{"role": "user", "content": "hi"}, {"role": "user", "content": "Please SUMMARIZE the above"}],
    });
    let content = |r: Reply| r.json()["choices"][0]["message"]["content"].clone();
    let addr = server.addr();
    let path = "/v1/chat/completions";
    assert_eq!(content(post(addr, path, &chat(false)).await), "first");
    assert_eq!(
        content(post(addr, path, &summary_request).await),
        "<overview>one</overview>"
    );
    assert_eq!(
        content(post(addr, path, &summary_request).await),
        "<overview>two</overview>"
    );
    assert_eq!(
        content(post(addr, path, &summary_request).await),
        "<overview>one</overview>",
        "cycled"
    );
    assert_eq!(content(post(addr, path, &chat(false)).await), "second");
    assert_eq!(server.requests().len(), 5, "every request is recorded");
    assert_eq!(server.responses_served(), 2);
}

#[tokio::test]
async fn raw_string_arguments_are_sent_verbatim() {
    let server = ScriptedServer::start(Script::new().respond(ScriptedResponse::tool_call(
        "bash",
        Value::String("{not json".into()),
    )))
    .await
    .unwrap();
    let body = post(server.addr(), "/v1/chat/completions", &chat(false))
        .await
        .json();
    assert_eq!(
        body["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"],
        "{not json"
    );
}

#[tokio::test]
async fn scripted_errors_carry_status_body_and_headers() {
    let server = ScriptedServer::start(
        Script::new()
            .respond(
                ScriptedResponse::error_message(429, "slow down").with_header("Retry-After", "2"),
            )
            .error(
                400,
                json!({"error": {"message": "bad tools", "type": "invalid_request_error"}}),
            )
            .respond(ScriptedResponse {
                status: Some(503),
                ..Default::default()
            }),
    )
    .await
    .unwrap();
    let r = post(server.addr(), "/v1/chat/completions", &chat(true)).await;
    assert_eq!(r.status, 429);
    assert_eq!(r.header("retry-after"), Some("2"));
    assert_eq!(r.json()["error"]["message"], "slow down");
    let r = post(server.addr(), "/v1/chat/completions", &chat(true)).await;
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["error"]["message"], "bad tools");
    let r = post(server.addr(), "/v1/chat/completions", &chat(false)).await;
    assert_eq!(r.status, 503);
    assert!(
        r.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("503")
    );
}

#[tokio::test]
async fn running_out_of_script_is_a_500_saying_so() {
    let server = ScriptedServer::start(Script::new().text("only one"))
        .await
        .unwrap();
    assert_eq!(
        post(server.addr(), "/v1/chat/completions", &chat(false))
            .await
            .status,
        200
    );
    let r = post(server.addr(), "/v1/chat/completions", &chat(false)).await;
    assert_eq!(r.status, 500);
    let msg = r.json()["error"]["message"].as_str().unwrap().to_string();
    assert!(
        msg.contains("no more responses") && msg.contains("1 were scripted"),
        "{msg}"
    );
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn records_every_request_body_in_order_and_to_a_file() {
    let dir = std::env::temp_dir().join(format!("scripted-model-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let record = dir.join("requests.jsonl");
    let _ = std::fs::remove_file(&record);
    let server = ScriptedServer::start_with(
        Script::new().text("a").text("b"),
        ServerOptions {
            port: 0,
            record_requests: Some(record.clone()),
        },
    )
    .await
    .unwrap();
    let mut first = chat(false);
    first["messages"] = json!([{"role": "user", "content": "first"}]);
    let mut second = chat(true);
    second["messages"] = json!([{"role": "user", "content": "second"}]);
    post(server.addr(), "/v1/chat/completions", &first).await;
    get(server.addr(), "/v1/models").await;
    post(server.addr(), "/v1/chat/completions", &second).await;
    assert_eq!(server.requests(), vec![first.clone(), second.clone()]);
    let lines: Vec<Value> = std::fs::read_to_string(&record)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines, vec![first, second]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn lists_a_model() {
    let server = ScriptedServer::start(Script::new().model("gpt-4.1"))
        .await
        .unwrap();
    let r = get(server.addr(), "/v1/models").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["data"][0]["id"], "gpt-4.1");
    assert_eq!(get(server.addr(), "/v1/nope").await.status, 404);
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn drop_after_chunks_cuts_the_connection_mid_body() {
    let server = ScriptedServer::start(
        Script::new().respond(ScriptedResponse::text("one two three four").drop_after_chunks(2)),
    )
    .await
    .unwrap();
    let r = post(server.addr(), "/v1/chat/completions", &chat(true)).await;
    assert_eq!(r.status, 200);
    assert!(!r.complete, "the chunked body must not be terminated");
    let events = r.events();
    assert_eq!(events.len(), 2);
    assert!(!events.contains(&"[DONE]".to_string()));
}

#[tokio::test]
async fn malformed_sends_a_line_that_is_not_json() {
    let server = ScriptedServer::start(
        Script::new()
            .respond(ScriptedResponse::text("hi").malformed())
            .respond(ScriptedResponse::text("hi").malformed()),
    )
    .await
    .unwrap();
    let r = post(server.addr(), "/v1/chat/completions", &chat(true)).await;
    let bad = r
        .events()
        .iter()
        .filter(|e| *e != "[DONE]" && serde_json::from_str::<Value>(e).is_err())
        .count();
    assert_eq!(bad, 1);
    let r = post(server.addr(), "/v1/chat/completions", &chat(false)).await;
    assert_eq!(r.status, 200);
    assert!(serde_json::from_slice::<Value>(&r.body).is_err());
}

#[tokio::test]
async fn hang_stays_silent_until_shutdown() {
    let server = ScriptedServer::start(
        Script::new()
            .respond(ScriptedResponse::text("never").hang())
            .respond(ScriptedResponse::text("a b c").drop_after_chunks(1).hang()),
    )
    .await
    .unwrap();
    let body = chat(true).to_string();
    let request = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut silent = TcpStream::connect(server.addr()).await.unwrap();
    silent.write_all(request.as_bytes()).await.unwrap();
    let mut partial = TcpStream::connect(server.addr()).await.unwrap();
    partial.write_all(request.as_bytes()).await.unwrap();

    // Wait (guarded) until both requests arrived, then check nothing / one event came.
    tokio::time::timeout(GUARD, async {
        while server.requests().len() < 2 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .unwrap();
    let mut buf = [0u8; 4096];
    let quiet = tokio::time::timeout(Duration::from_millis(200), silent.read(&mut buf)).await;
    assert!(quiet.is_err(), "a hanging response sends nothing");
    // The partial one sent its head and one event, then nothing more.
    let mut got = Vec::new();
    while !String::from_utf8_lossy(&got).contains("\n\n") {
        let n = tokio::time::timeout(GUARD, partial.read(&mut buf))
            .await
            .unwrap()
            .unwrap();
        assert!(n > 0);
        got.extend_from_slice(&buf[..n]);
    }
    let more = tokio::time::timeout(Duration::from_millis(200), partial.read(&mut buf)).await;
    assert!(more.is_err(), "silent after dropAfterChunks");

    server.shutdown();
    let n = tokio::time::timeout(GUARD, silent.read(&mut buf))
        .await
        .expect("shutdown closes hanging connections")
        .unwrap_or(0);
    assert_eq!(n, 0);
}

#[tokio::test]
async fn delays_are_applied() {
    let server = ScriptedServer::start(
        Script::new().respond(
            ScriptedResponse::text("a b")
                .with_delay_ms(50)
                .with_chunk_delay_ms(10),
        ),
    )
    .await
    .unwrap();
    let started = std::time::Instant::now();
    let r = post(server.addr(), "/v1/chat/completions", &chat(true)).await;
    assert!(r.complete);
    // Lower bound only: sleeping never finishes early.
    assert!(started.elapsed() >= Duration::from_millis(50));
}

#[test]
fn scripts_parse_from_json_as_documented() {
    let script = Script::from_json(
        r#"{"model":"gpt-4.1","responses":[
            {"content":"text","toolCalls":[{"name":"glob","arguments":{"pattern":"*.txt"}}],
             "usage":{"prompt_tokens":10,"completion_tokens":2},"status":200,
             "errorBody":{"error":{"message":"x"}},"headers":{"Retry-After":"1"},
             "delayMs":0,"chunkDelayMs":0,"dropAfterChunks":3,"hang":false,"malformed":false,
             "finishReason":"stop"},
            {"toolCalls":[{"id":"call_abc","name":"view","arguments":"{\"path\":\"a\"}"}]}
        ]}"#,
    )
    .unwrap();
    assert_eq!(script.responses.len(), 2);
    assert_eq!(script.responses[0].drop_after_chunks, Some(3));
    assert_eq!(
        script.responses[1].tool_calls[0].id.as_deref(),
        Some("call_abc")
    );
    assert_eq!(
        script.responses[1].tool_calls[0].arguments_text(),
        r#"{"path":"a"}"#
    );
    assert_eq!(Script::from_json(&script.to_json()).unwrap(), script);
    let err = Script::from_json(r#"{"responses":[{"contnet":"typo"}]}"#).unwrap_err();
    assert!(err.to_string().contains("contnet"), "{err}");
}

#[test]
fn the_binary_serves_a_script_file_and_records_requests() {
    use std::io::{BufRead, BufReader, Read, Write};
    let dir = std::env::temp_dir().join(format!("scripted-model-bin-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("script.json");
    let record = dir.join("requests.jsonl");
    let _ = std::fs::remove_file(&record);
    std::fs::write(
        &script,
        r#"{"responses":[{"content":"hello from the binary"}]}"#,
    )
    .unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_scripted-model"))
        .arg("--script")
        .arg(&script)
        .arg("--record-requests")
        .arg(&record)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("unexpected first line: {line:?}"))
        .to_string();
    assert!(
        url.starts_with("http://127.0.0.1:") && url.ends_with("/v1"),
        "{url}"
    );
    let authority = url.trim_start_matches("http://").trim_end_matches("/v1");
    let body = chat(false).to_string();
    let mut stream = std::net::TcpStream::connect(authority).unwrap();
    stream.set_read_timeout(Some(GUARD)).unwrap();
    write!(
        stream,
        "POST /v1/chat/completions HTTP/1.1\r\nHost: {authority}\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut reply = Vec::new();
    stream.read_to_end(&mut reply).unwrap();
    let reply = parse_reply(&reply);
    assert_eq!(
        reply.json()["choices"][0]["message"]["content"],
        "hello from the binary"
    );
    let recorded: Value =
        serde_json::from_str(std::fs::read_to_string(&record).unwrap().trim()).unwrap();
    assert_eq!(recorded, chat(false));
    child.kill().unwrap();
    child.wait().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}
