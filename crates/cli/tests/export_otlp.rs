//! `turnstile export --otlp` against a real HTTP receiver on a loopback port, which decodes each
//! request with the official OTLP message definitions: the span tree of fixtures (the real
//! runtime's included), a crashed session, contents only on opt-in, and receivers that refuse
//! or stall.

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use assert_cmd::Command;
use prost::Message;
use turnstile_otel::proto::collector::trace::v1::ExportTraceServiceRequest;
use turnstile_otel::proto::common::v1::any_value::Value;
use turnstile_otel::proto::trace::v1::Span;

/// How the receiver answers.
#[derive(Clone, Copy)]
pub(crate) enum Answer {
    Accept,
    Status(u16),
    /// Reads the request and never answers.
    Stall,
}

/// One request as received.
pub(crate) struct Received {
    path: String,
    headers: HashMap<String, String>,
    pub(crate) body: Vec<u8>,
}

/// An HTTP/1.1 receiver on 127.0.0.1 (a port of its own), one thread per connection.
pub(crate) struct Receiver {
    pub(crate) url: String,
    pub(crate) received: Arc<Mutex<Vec<Received>>>,
}

impl Receiver {
    pub(crate) fn start(answer: Answer) -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let received = Arc::new(Mutex::new(Vec::new()));
        let log = received.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                let log = log.clone();
                std::thread::spawn(move || serve(stream, answer, &log));
            }
        });
        Receiver { url, received }
    }

    pub(crate) fn spans(&self) -> Vec<Span> {
        let received = self.received.lock().unwrap();
        let mut spans = Vec::new();
        for request in received.iter() {
            let decoded = ExportTraceServiceRequest::decode(request.body.as_slice()).unwrap();
            for resource in decoded.resource_spans {
                for scope in resource.scope_spans {
                    spans.extend(scope.spans);
                }
            }
        }
        spans
    }
}

fn serve(stream: TcpStream, answer: Answer, log: &Mutex<Vec<Received>>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut stream = stream;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let path = line.split_whitespace().nth(1).unwrap_or("").to_owned();
        let mut headers = HashMap::new();
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 {
                return;
            }
            let header = header.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((k, v)) = header.split_once(':') {
                headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_owned());
            }
        }
        let len: usize = headers
            .get("content-length")
            .and_then(|l| l.parse().ok())
            .unwrap_or(0);
        let mut body = vec![0; len];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        log.lock().unwrap().push(Received {
            path,
            headers,
            body,
        });
        let reply = match answer {
            Answer::Accept => "HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\nContent-Length: 0\r\n\r\n".to_owned(),
            Answer::Status(code) => format!(
                "HTTP/1.1 {code} Refused\r\nContent-Type: text/plain\r\nContent-Length: 15\r\n\r\nstorage is full"
            ),
            Answer::Stall => {
                // Hold the connection open, unanswered, until the client gives up.
                let mut rest = Vec::new();
                let _ = reader.read_to_end(&mut rest);
                return;
            }
        };
        if stream.write_all(reply.as_bytes()).is_err() {
            return;
        }
    }
}

fn fixture(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures")
        .join(path)
}

fn turnstile(cwd: &Path) -> Command {
    let mut cmd = Command::cargo_bin("turnstile").unwrap();
    cmd.current_dir(cwd)
        .env_remove("COPILOT_HOME")
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .env_remove("OTEL_EXPORTER_OTLP_HEADERS")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_HEADERS")
        .env_remove("OTEL_EXPORTER_OTLP_TIMEOUT")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT")
        .env_remove("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT")
        .env_remove("OTEL_SERVICE_NAME");
    cmd
}

fn export(journal: &Path, url: &str, envs: &[(&str, &str)]) -> std::process::Output {
    let tmp = tempfile::tempdir().unwrap();
    let mut cmd = turnstile(tmp.path());
    cmd.args(["export", "--otlp", url]).arg(journal);
    for (k, v) in envs {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

pub(crate) fn attr<'a>(span: &'a Span, key: &str) -> Option<&'a Value> {
    span.attributes
        .iter()
        .find(|a| a.key == key)
        .and_then(|a| a.value.as_ref()?.value.as_ref())
}

pub(crate) fn text<'a>(span: &'a Span, key: &str) -> Option<&'a str> {
    match attr(span, key)? {
        Value::StringValue(s) => Some(s),
        _ => None,
    }
}

pub(crate) fn op(span: &Span) -> &str {
    text(span, "gen_ai.operation.name").unwrap_or("")
}

/// Every span's parent was exported, in the same trace; the roots are interactions.
pub(crate) fn check_tree(spans: &[Span]) {
    let ids: HashMap<_, _> = spans.iter().map(|s| (s.span_id.clone(), s)).collect();
    assert_eq!(ids.len(), spans.len(), "span ids are unique");
    for span in spans {
        if span.parent_span_id.is_empty() {
            assert_eq!(op(span), "invoke_agent", "{} is a root", span.name);
            continue;
        }
        let parent = ids
            .get(&span.parent_span_id)
            .unwrap_or_else(|| panic!("the parent of {} was not exported", span.name));
        assert_eq!(parent.trace_id, span.trace_id);
        match op(span) {
            "chat" | "execute_tool" => assert_eq!(op(parent), "invoke_agent"),
            // A sub-agent under the `task` call that started it; a follow-up round of one
            // (`write_agent`) under the interaction that sent it.
            "invoke_agent" => assert!(
                parent.name == "execute_tool task" || op(parent) == "invoke_agent",
                "{} under {}",
                span.name,
                parent.name
            ),
            other => panic!("unexpected operation {other}"),
        }
    }
}

#[test]
fn the_receiver_decodes_the_span_tree_of_the_real_runtimes_and_turnstiles_journals() {
    let receiver = Receiver::start(Answer::Accept);
    let real = fixture("copilot-runtime/s1-subagents.events.jsonl");
    let out = export(
        &real,
        &receiver.url,
        &[(
            "OTEL_EXPORTER_OTLP_HEADERS",
            "authorization=Bearer%20t0ken,x-tenant=a",
        )],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        stdout.trim(),
        format!("16 spans in 1 requests to {}/v1/traces", receiver.url)
    );
    {
        let received = receiver.received.lock().unwrap();
        assert_eq!(received.len(), 1);
        assert_eq!(received[0].path, "/v1/traces");
        assert_eq!(
            received[0].headers["content-type"],
            "application/x-protobuf"
        );
        assert_eq!(received[0].headers["authorization"], "Bearer t0ken");
        assert_eq!(received[0].headers["x-tenant"], "a");
    }
    let spans = receiver.spans();
    check_tree(&spans);
    let names: HashSet<_> = spans.iter().map(|s| s.name.as_str()).collect();
    for name in [
        "invoke_agent GitHub Copilot",
        "invoke_agent explore",
        "invoke_agent general-purpose",
        "chat scripted-model",
        "execute_tool view",
        "execute_tool bash",
    ] {
        assert!(names.contains(name), "{name} missing from {names:?}");
    }

    // turnstile's own journal of sub-agents (one in background, a follow-up), and a second
    // export of the same session: the same ids.
    let receiver = Receiver::start(Answer::Accept);
    let ours = fixture("subagents/events.jsonl");
    for _ in 0..2 {
        let out = export(&ours, &receiver.url, &[]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let spans = receiver.spans();
    let (first, second) = spans.split_at(spans.len() / 2);
    assert_eq!(first, second, "a second export sends the same spans");
    check_tree(first);
    assert_eq!(first.iter().filter(|s| op(s) == "chat").count(), 18);
    assert_eq!(first.iter().filter(|s| op(s) == "execute_tool").count(), 17);
    let rounds: Vec<_> = first
        .iter()
        .filter(|s| s.name == "invoke_agent general-purpose")
        .map(|s| text(s, "gen_ai.agent.id"))
        .collect();
    assert_eq!(
        rounds,
        [Some("call_sa_03"), Some("call_sa_03")],
        "the agent and its follow-up"
    );
}

#[test]
fn a_crashed_sessions_journal_exports_what_it_holds_with_its_open_spans_ended_and_marked() {
    let tmp = tempfile::tempdir().unwrap();
    let journal = std::fs::read_to_string(fixture("crash-resume/events.jsonl")).unwrap();
    // The session as the crash left it: cut after the build's tool start, mid-line.
    let start = journal.find("\"type\":\"tool.execution_start\"").unwrap();
    let line_end = start + journal[start..].find('\n').unwrap() + 1;
    let torn = format!("{}{{\"type\":\"permission.req", &journal[..line_end]);
    let path = tmp.path().join("events.jsonl");
    std::fs::write(&path, torn).unwrap();
    let receiver = Receiver::start(Answer::Accept);
    let out = export(&path, &receiver.url, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("torn line"), "{stderr}");
    assert!(stderr.contains("never ended in the journal"), "{stderr}");
    let spans = receiver.spans();
    check_tree(&spans);
    let tool = spans.iter().find(|s| op(s) == "execute_tool").unwrap();
    let agent = spans.iter().find(|s| op(s) == "invoke_agent").unwrap();
    for span in [tool, agent] {
        assert_eq!(
            attr(span, "turnstile.span.unfinished"),
            Some(&Value::BoolValue(true))
        );
        assert_eq!(text(span, "error.type"), Some("unfinished"));
        assert_eq!(span.status.as_ref().unwrap().code, 2, "error status");
        assert!(span.end_time_unix_nano >= span.start_time_unix_nano);
    }
}

#[test]
fn message_contents_go_out_only_with_the_opt_in() {
    let journal = fixture("copilot-runtime/c1-new-session.events.jsonl");
    let contents = [
        "gen_ai.input.messages",
        "gen_ai.output.messages",
        "gen_ai.tool.call.arguments",
        "gen_ai.tool.call.result",
    ];
    let plain = Receiver::start(Answer::Accept);
    assert!(export(&journal, &plain.url, &[]).status.success());
    for span in plain.spans() {
        for key in contents {
            assert!(
                attr(&span, key).is_none(),
                "{key} on {} without the opt-in",
                span.name
            );
        }
    }
    let full = Receiver::start(Answer::Accept);
    let out = export(
        &journal,
        &full.url,
        &[("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")],
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("(with message contents)"));
    let spans = full.spans();
    for key in contents {
        assert!(
            spans.iter().any(|s| attr(s, key).is_some()),
            "{key} missing"
        );
    }
}

#[test]
fn a_receiver_that_refuses_or_stalls_is_a_clear_error_and_a_failed_exit() {
    let journal = fixture("multi-turn/events.jsonl");
    let refusing = Receiver::start(Answer::Status(500));
    let out = export(&journal, &refusing.url, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "the OTLP receiver at {}/v1/traces refused the spans: HTTP 500",
            refusing.url
        )),
        "{stderr}"
    );
    assert!(stderr.contains("storage is full"), "{stderr}");

    let stalling = Receiver::start(Answer::Stall);
    let out = export(
        &journal,
        &stalling.url,
        &[("OTEL_EXPORTER_OTLP_TIMEOUT", "300")],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("did not answer within 300ms"), "{stderr}");
    assert_eq!(
        stalling.received.lock().unwrap().len(),
        1,
        "no second request"
    );

    // Nobody listens: the port of a listener just closed.
    let closed = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let out = export(&journal, &url, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("cannot send to the OTLP receiver at"),
        "{stderr}"
    );
}
