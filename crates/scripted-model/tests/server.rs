//! The scripted server, checked with a raw HTTP client (tests of the engine depend on it).

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use turnstile_scripted_model::{Script, ScriptedResponse, ScriptedServer, ServerOptions};

/// Failure guard only: no test depends on timing to pass.
const GUARD: Duration = Duration::from_secs(20);

struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    /// Chunked body ended with its last chunk (false when the connection was cut).
    complete: bool,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("JSON body")
    }

    /// The `data:` payloads of an SSE body.
    fn events(&self) -> Vec<String> {
        let text = String::from_utf8(self.body.clone()).unwrap();
        assert!(
            text.is_empty() || text.ends_with("\n\n"),
            "SSE events end with a blank line: {text:?}"
        );
        text.split("\n\n")
            .filter(|e| !e.is_empty())
            .map(|e| {
                e.strip_prefix("data: ")
                    .unwrap_or_else(|| panic!("not a data line: {e:?}"))
                    .to_string()
            })
            .collect()
    }
}

async fn raw(addr: SocketAddr, request: Vec<u8>) -> Reply {
    tokio::time::timeout(GUARD, async {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        stream.write_all(&request).await.unwrap();
        let mut bytes = Vec::new();
        stream.read_to_end(&mut bytes).await.unwrap();
        parse_reply(&bytes)
    })
    .await
    .expect("reply within the guard")
}

async fn post(addr: SocketAddr, path: &str, body: &Value) -> Reply {
    let body = body.to_string();
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    raw(addr, request.into_bytes()).await
}

async fn get(addr: SocketAddr, path: &str) -> Reply {
    raw(
        addr,
        format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\n\r\n").into_bytes(),
    )
    .await
}

fn parse_reply(bytes: &[u8]) -> Reply {
    let end = bytes
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a response head");
    let head = std::str::from_utf8(&bytes[..end]).unwrap();
    let mut lines = head.split("\r\n");
    let status: u16 = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers: Vec<(String, String)> = lines
        .map(|l| {
            let (n, v) = l.split_once(':').unwrap();
            (n.trim().to_string(), v.trim().to_string())
        })
        .collect();
    let rest = &bytes[end + 4..];
    let chunked = headers
        .iter()
        .any(|(n, v)| n.eq_ignore_ascii_case("transfer-encoding") && v == "chunked");
    if !chunked {
        return Reply {
            status,
            headers,
            body: rest.to_vec(),
            complete: true,
        };
    }
    let mut body = Vec::new();
    let mut pos = 0;
    let mut complete = false;
    while let Some(p) = rest[pos..].windows(2).position(|w| w == b"\r\n") {
        let size =
            usize::from_str_radix(std::str::from_utf8(&rest[pos..pos + p]).unwrap(), 16).unwrap();
        pos += p + 2;
        if size == 0 {
            complete = true;
            break;
        }
        body.extend_from_slice(&rest[pos..pos + size]);
        pos += size + 2;
    }
    Reply {
        status,
        headers,
        body,
        complete,
    }
}

fn chat(stream: bool) -> Value {
    json!({
        "model": "gpt-test",
        "messages": [{"role": "user", "content": "hi"}],
        "stream": stream,
        "stream_options": {"include_usage": true},
    })
}

fn chunks(events: &[String]) -> Vec<Value> {
    events
        .iter()
        .filter(|e| *e != "[DONE]")
        .map(|e| serde_json::from_str(e).unwrap())
        .collect()
}

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
async fn a_sub_agents_answers_go_to_its_requests_whatever_the_order() {
    let server = ScriptedServer::start(
        Script::new()
            .text("main one")
            .respond(ScriptedResponse::text("agent one").for_system("You are a helper"))
            .respond(ScriptedResponse::text("agent two").for_system("You are a helper"))
            .text("main two"),
    )
    .await
    .unwrap();
    let with_system = |system: &str| json!({"model": "m", "messages": [{"role": "system", "content": system}, {"role": "user", "content": "hi"}]});
    let content = |r: Reply| r.json()["choices"][0]["message"]["content"].clone();
    let addr = server.addr();
    let path = "/v1/chat/completions";
    // The main agent's calls skip the agent's answers, and the agent's take theirs first.
    assert_eq!(
        content(post(addr, path, &with_system("You are the main agent")).await),
        "main one"
    );
    assert_eq!(
        content(post(addr, path, &with_system("You are the main agent")).await),
        "main two"
    );
    assert_eq!(
        content(post(addr, path, &with_system("You are a helper, short")).await),
        "agent one"
    );
    assert_eq!(
        content(post(addr, path, &with_system("You are a helper, short")).await),
        "agent two"
    );
    let over = post(addr, path, &with_system("You are the main agent")).await;
    assert_eq!(over.status, 500);
    assert_eq!(server.responses_served(), 5);
}

#[tokio::test]
async fn a_held_answer_waits_for_the_requests_it_follows() {
    let server = ScriptedServer::start(
        Script::new()
            .respond(ScriptedResponse::text("held").after_requests(2))
            .text("second"),
    )
    .await
    .unwrap();
    let addr = server.addr();
    let held = tokio::spawn(async move { post(addr, "/v1/chat/completions", &chat(false)).await });
    // Not answered while it is the only request (a slow machine can only make this pass, not
    // fail); answered once the second has arrived.
    while server.requests().is_empty() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!held.is_finished());
    let second = post(addr, "/v1/chat/completions", &chat(false)).await;
    let content = |r: &Reply| r.json()["choices"][0]["message"]["content"].clone();
    assert_eq!(content(&second), "second");
    assert_eq!(content(&held.await.unwrap()), "held");
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
