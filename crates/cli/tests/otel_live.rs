//! Live traces: the real `turnstile run` and SDK server against the scripted model, with
//! `OTEL_EXPORTER_OTLP_ENDPOINT` naming the protobuf-decoding receiver of `export_otlp.rs` on
//! 127.0.0.1. The spans sent live are the ones `turnstile export --otlp` sends from the same
//! journal (plus the token counts the journal does not keep); contents only on opt-in; a
//! receiver that refuses or is not there costs one warning, never the session.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};

use assert_cmd::cargo::CommandCargoExt;
use serde_json::json;
use turnstile_otel::proto::trace::v1::Span;
use turnstile_scripted_model::{Script, ScriptedResponse, ScriptedServer};

use crate::common::Env;
use crate::common::rpc::StdioServer;
use crate::export_otlp::{Answer, Receiver, attr, check_tree, op, text};

const OTEL_VARS: [&str; 13] = [
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_HEADERS",
    "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
    "OTEL_EXPORTER_OTLP_TIMEOUT",
    "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
    "OTEL_EXPORTER_OTLP_PROTOCOL",
    "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
    "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT",
    "OTEL_SERVICE_NAME",
    "OTEL_SDK_DISABLED",
    "OTEL_TRACES_EXPORTER",
    "OTEL_BSP_MAX_QUEUE_SIZE",
];

/// Attributes the live path adds from `assistant.usage`, a notice the journal does not keep.
const LIVE_ONLY: [&str; 3] = [
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.cache_read.input_tokens",
    "gen_ai.usage.cache_creation.input_tokens",
];

fn clean(cmd: &mut Command) {
    for var in OTEL_VARS {
        cmd.env_remove(var);
    }
}

/// A model that views alpha.txt, then answers.
fn view_then_answer() -> Script {
    Script::new()
        .respond(ScriptedResponse::tool_call(
            "view",
            json!({"path": "alpha.txt"}),
        ))
        .text("alpha it says")
}

/// `turnstile run PROMPT` to its end with `envs`.
fn run(env: &Env, model: &ScriptedServer, envs: &[(&str, &str)]) -> std::process::Output {
    let mut cmd = env.cmd(model, &["run", "--allow-all-tools", "read alpha.txt"]);
    clean(&mut cmd);
    cmd.envs(envs.iter().copied());
    cmd.output().unwrap()
}

fn by_id(spans: Vec<Span>) -> BTreeMap<Vec<u8>, Span> {
    spans.into_iter().map(|s| (s.span_id.clone(), s)).collect()
}

/// The spans without the attributes only the live path knows.
fn without_live_only(mut span: Span) -> Span {
    span.attributes
        .retain(|a| !LIVE_ONLY.contains(&a.key.as_str()));
    span
}

fn int(span: &Span, key: &str) -> Option<i64> {
    match attr(span, key)? {
        turnstile_otel::proto::common::v1::any_value::Value::IntValue(i) => Some(*i),
        _ => None,
    }
}

/// The spans `turnstile export --otlp` sends from `journal`, with `envs`.
fn exported(journal: &Path, envs: &[(&str, &str)]) -> Vec<Span> {
    let receiver = Receiver::start(Answer::Accept);
    let mut cmd = Command::cargo_bin("turnstile").unwrap();
    clean(&mut cmd);
    let out = cmd
        .args(["export", "--otlp", &receiver.url])
        .arg(journal)
        .envs(envs.iter().copied())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    receiver.spans()
}

#[test]
fn a_run_sends_its_spans_live_and_they_are_the_exports_of_its_journal() {
    let env = Env::new();
    let model = env.server(view_then_answer());
    let receiver = Receiver::start(Answer::Accept);
    let out = run(
        &env,
        &model,
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url.as_str()),
            ("OTEL_SERVICE_NAME", "live-test"),
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("warning"), "{stderr}");
    let (id, journal) = env.only_session();

    let live = receiver.spans();
    check_tree(&live);
    let mut names: Vec<&str> = live.iter().map(|s| s.name.as_str()).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "chat test-model",
            "chat test-model",
            "execute_tool view",
            "invoke_agent GitHub Copilot"
        ]
    );
    let root = live.iter().find(|s| s.parent_span_id.is_empty()).unwrap();
    for span in &live {
        assert_eq!(span.trace_id, root.trace_id, "one interaction, one trace");
        assert_eq!(text(span, "gen_ai.conversation.id"), Some(id.as_str()));
        assert!(span.end_time_unix_nano >= span.start_time_unix_nano);
        // No contents without the opt-in.
        for key in [
            "gen_ai.input.messages",
            "gen_ai.output.messages",
            "gen_ai.tool.call.arguments",
            "gen_ai.tool.call.result",
        ] {
            assert!(attr(span, key).is_none(), "{key} on {}", span.name);
        }
    }
    let tool = live.iter().find(|s| op(s) == "execute_tool").unwrap();
    assert_eq!(text(tool, "gen_ai.tool.name"), Some("view"));
    assert_eq!(tool.parent_span_id, root.span_id);
    let chats: Vec<&Span> = live.iter().filter(|s| op(s) == "chat").collect();
    for chat in &chats {
        assert_eq!(chat.parent_span_id, root.span_id);
        assert_eq!(text(chat, "gen_ai.request.model"), Some("test-model"));
        assert!(int(chat, "gen_ai.usage.output_tokens").is_some_and(|n| n > 0));
        // Known live only: the journal does not keep `assistant.usage`.
        assert!(int(chat, "gen_ai.usage.input_tokens").is_some_and(|n| n > 0));
    }
    let outputs: i64 = chats
        .iter()
        .map(|c| int(c, "gen_ai.usage.output_tokens").unwrap())
        .sum();
    assert_eq!(int(root, "gen_ai.usage.output_tokens"), Some(outputs));
    // The service is the user's.
    {
        use prost::Message;
        let received = receiver.received.lock().unwrap();
        let request =
            turnstile_otel::proto::collector::trace::v1::ExportTraceServiceRequest::decode(
                received[0].body.as_slice(),
            )
            .unwrap();
        let resource = request.resource_spans[0].resource.as_ref().unwrap();
        assert!(
            resource
                .attributes
                .iter()
                .any(|a| a.key == "service.name" && format!("{:?}", a.value).contains("live-test"))
        );
    }

    // The export of the journal: the same spans, ids, times and attributes, but the counts
    // only the live notices hold.
    let export = by_id(exported(&journal, &[]));
    let live = by_id(live);
    assert_eq!(
        live.keys().collect::<Vec<_>>(),
        export.keys().collect::<Vec<_>>()
    );
    for (key, span) in live {
        assert_eq!(
            without_live_only(span),
            without_live_only(export[&key].clone())
        );
    }
}

#[test]
fn contents_are_sent_live_only_on_opt_in_as_the_export_sends_them() {
    let env = Env::new();
    let model = env.server(view_then_answer());
    let receiver = Receiver::start(Answer::Accept);
    let opt_in = [("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")];
    let out = run(
        &env,
        &model,
        &[
            (
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                &format!("{}/v1/traces", receiver.url),
            ),
            opt_in[0],
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let live = receiver.spans();
    let root = live.iter().find(|s| s.parent_span_id.is_empty()).unwrap();
    assert!(
        text(root, "gen_ai.input.messages").is_some_and(|m| m.contains("read alpha.txt")),
        "{root:?}"
    );
    assert!(text(root, "gen_ai.output.messages").is_some_and(|m| m.contains("alpha it says")));
    let tool = live.iter().find(|s| op(s) == "execute_tool").unwrap();
    assert!(text(tool, "gen_ai.tool.call.arguments").is_some_and(|a| a.contains("alpha.txt")));
    assert!(text(tool, "gen_ai.tool.call.result").is_some_and(|r| r.contains("alpha")));

    let (_, journal) = env.only_session();
    let export = by_id(exported(&journal, &opt_in));
    for (key, span) in by_id(live) {
        assert_eq!(
            without_live_only(span),
            without_live_only(export[&key].clone())
        );
    }
}

#[test]
fn a_receiver_that_refuses_or_is_not_there_costs_one_warning_and_never_the_session() {
    let refusing = Receiver::start(Answer::Status(500));
    // A port that was free a moment ago and is closed now: nothing listens there.
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", listener.local_addr().unwrap())
    };
    for url in [refusing.url.as_str(), closed.as_str()] {
        let env = Env::new();
        let model = env.server(view_then_answer());
        let out = run(&env, &model, &[("OTEL_EXPORTER_OTLP_ENDPOINT", url)]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{url}: {stderr}");
        assert_eq!(
            stderr.matches("warning").count(),
            1,
            "{url}: one warning: {stderr}"
        );
        assert!(stderr.contains("warning: live traces"), "{stderr}");
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("alpha it says"),
            "the session ran"
        );
    }
    assert!(!refusing.spans().is_empty(), "the refused request was sent");
}

#[test]
fn a_protocol_other_than_http_protobuf_is_refused_with_a_warning_and_the_session_runs() {
    let env = Env::new();
    let model = env.server(view_then_answer());
    let receiver = Receiver::start(Answer::Accept);
    let out = run(
        &env,
        &model,
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url.as_str()),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("warning: live traces are off: OTEL_EXPORTER_OTLP_PROTOCOL: `grpc`"),
        "{stderr}"
    );
    assert!(receiver.spans().is_empty());
}

#[test]
fn the_sdk_server_sends_each_interaction_live_when_it_ends() {
    let env = Env::new();
    let model = env.server(view_then_answer().text("second answer"));
    let receiver = Receiver::start(Answer::Accept);
    let mut cmd = env.stdio_command();
    clean(&mut cmd);
    cmd.env("OTEL_EXPORTER_OTLP_ENDPOINT", &receiver.url)
        // A schedule far longer than the test: the interaction's end sends its spans.
        .env("OTEL_BSP_SCHEDULE_DELAY", "3600000")
        .stderr(Stdio::piped());
    let mut server = StdioServer::spawn(cmd);
    let id = server.create_session(&model.url(), env.work.path());
    server.send_until_idle(&id, "read alpha.txt");
    // The interaction ended at its idle: its spans come while the session stays open.
    let first = wait_for_root(&receiver, 1);
    let mut names: Vec<String> = first.iter().map(|s| s.name.clone()).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "chat test-model",
            "chat test-model",
            "execute_tool view",
            "invoke_agent GitHub Copilot"
        ]
    );
    check_tree(&first);

    server.ok(
        "session.send",
        json!({"sessionId": id, "prompt": "and again"}),
    );
    server.events_until(|e| e["type"] == "session.idle");
    server.ok("session.destroy", json!({"sessionId": id}));
    let (status, _) = server.stop();
    assert!(status.success());

    let live = receiver.spans();
    check_tree(&live);
    let roots = live.iter().filter(|s| s.parent_span_id.is_empty()).count();
    assert_eq!(roots, 2, "two interactions, two traces");
    for span in &live {
        assert_eq!(text(span, "gen_ai.conversation.id"), Some(id.as_str()));
    }
    let journal = env
        .state
        .path()
        .join("session-state")
        .join(&id)
        .join("events.jsonl");
    let export = by_id(exported(&journal, &[]));
    let live = by_id(live);
    assert_eq!(
        live.keys().collect::<Vec<_>>(),
        export.keys().collect::<Vec<_>>()
    );
    let types: Vec<String> = crate::common::journal_values(&journal)
        .iter()
        .map(|e| format!("{} {}", e["timestamp"], e["type"]))
        .collect();
    for (key, span) in live {
        assert_eq!(
            without_live_only(span),
            without_live_only(export[&key].clone()),
            "{types:#?}"
        );
    }
}

/// The spans received once `roots` interactions arrived. The receiver is fed by the server's
/// sender thread: the test waits on what it receives, not on a clock (each look sleeps a
/// little; the test's own timeout is the bound).
fn wait_for_root(receiver: &Receiver, roots: usize) -> Vec<Span> {
    loop {
        let spans = receiver.spans();
        if spans.iter().filter(|s| s.parent_span_id.is_empty()).count() >= roots {
            return spans;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn a_resumed_session_sends_its_new_interaction_live_as_the_export_of_its_journal_does() {
    let env = Env::new();
    let model = env.server(view_then_answer().text("resumed answer"));
    let out = run(&env, &model, &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (id, journal) = env.only_session();

    let receiver = Receiver::start(Answer::Accept);
    let mut cmd = env.cmd(&model, &["resume", &id, "once more"]);
    clean(&mut cmd);
    let out = cmd
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &receiver.url)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("warning"), "{stderr}");

    // Only the resumed process's interaction went out live, whole.
    let live = receiver.spans();
    check_tree(&live);
    let roots: Vec<&Span> = live
        .iter()
        .filter(|s| s.parent_span_id.is_empty())
        .collect();
    assert_eq!(roots.len(), 1, "{live:?}");
    assert!(live.iter().any(|s| op(s) == "chat"));
    for span in &live {
        assert_eq!(text(span, "gen_ai.conversation.id"), Some(id.as_str()));
    }
    // The export of the whole journal holds the same spans: the model comes from
    // `session.resume`, the provider from the endpoint the resume goes back to (its journal
    // entry is before the resume, out of the live stream).
    let export = by_id(exported(&journal, &[]));
    for span in &live {
        let twin = export
            .get(&span.span_id)
            .unwrap_or_else(|| panic!("{} is not in the export", span.name));
        assert_eq!(
            without_live_only(span.clone()),
            without_live_only((*twin).clone())
        );
    }
}

#[test]
fn a_client_that_leaves_without_closing_its_session_lets_the_server_exit_with_all_sent() {
    let env = Env::new();
    let model = env.server(view_then_answer());
    let receiver = Receiver::start(Answer::Accept);
    let mut cmd = env.stdio_command();
    clean(&mut cmd);
    cmd.env("OTEL_EXPORTER_OTLP_ENDPOINT", &receiver.url)
        // Were the session's stream never to end, the exit would wait this long: the test
        // would hang rather than pass.
        .env("OTEL_EXPORTER_OTLP_TIMEOUT", "3600000")
        .stderr(Stdio::piped());
    let mut server = StdioServer::spawn(cmd);
    let id = server.create_session(&model.url(), env.work.path());
    server.send_until_idle(&id, "read alpha.txt");
    // The client leaves: the server closes the session, its stream ends, and the exit
    // finds nothing left to wait for.
    let (status, stderr) = server.stop();
    assert!(status.success(), "{stderr}");
    assert!(!stderr.contains("warning"), "{stderr}");
    let live = receiver.spans();
    check_tree(&live);
    assert_eq!(live.len(), 4, "{live:?}");
}
