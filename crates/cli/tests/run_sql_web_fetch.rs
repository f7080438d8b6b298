//! `sql` and `web_fetch` through `turnstile run` and `turnstile resume` on a scripted model at
//! 127.0.0.1: the session database lives in the session directory and survives a resume,
//! also one after a kill -9 (what was committed is there);
//! web_fetch refuses loopback unless `--allow-url` names the host, follows a redirect only
//! to a target approved as a URL of its own (recorded as its own permission request) that
//! passes the checks again, and `--deny-url` wins.

use crate::common;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;

use common::watched::{Watched, started};
use common::{Env, audit_clean, call, tool_result};
use serde_json::{Value, json};
use turnstile_scripted_model::{Script, ScriptedResponse};

fn sql(id: &str, query: &str) -> ScriptedResponse {
    call(
        id,
        "sql",
        json!({"description": "Query the database", "query": query}),
    )
}

#[test]
fn the_session_database_survives_a_resume() {
    let env = Env::new();
    let first = env.server(
        Script::new()
            .respond(sql(
                "c1",
                "INSERT INTO todos (id, title) VALUES ('t1', 'Write tests')",
            ))
            .respond(sql(
                "c2",
                "CREATE TABLE notes (n TEXT); INSERT INTO notes VALUES ('kept')",
            ))
            .text("Noted."),
    );
    env.run_ok(&first, &["run", "keep notes"]);
    let last = first.requests().last().unwrap().clone();
    assert_eq!(
        tool_result(&last, "c1"),
        "1 row(s) inserted. Last inserted row ID: 1."
    );
    let (id, events) = env.only_session();
    let dir = events.parent().unwrap();
    assert!(dir.join("session.db").is_file());

    let second = env.server(
        Script::new()
            .respond(sql(
                "c3",
                "SELECT t.id, t.status, n.n FROM todos t, notes n",
            ))
            .text("Still there."),
    );
    env.run_ok(&second, &["resume", &id[..8], "what was kept?"]);
    let last = second.requests().last().unwrap().clone();
    assert_eq!(
        tool_result(&last, "c3"),
        "1 row(s) returned:\n\n| id | status | n |\n| --- | --- | --- |\n| t1 | pending | kept |"
    );
    audit_clean(&events);
}

#[test]
fn the_session_database_keeps_what_was_committed_through_a_kill_9() {
    let env = Env::new();
    let first = env.server(
        Script::new()
            .respond(sql(
                "c1",
                "INSERT INTO todos (id, title) VALUES ('t1', 'Write tests')",
            ))
            .respond(call(
                "c2",
                "bash",
                json!({"command": "sleep 300", "description": "hold", "initial_wait": 600}),
            )),
    );
    let mut engine = Watched::spawn(env.cmd(
        &first,
        &["run", "--json", "--allow-all-tools", "keep a todo"],
    ));
    // The insert's call has completed (its commit with it) before the next call starts.
    engine.until(started("c2"));
    engine.kill_9();
    let (id, events) = env.only_session();

    let second = env.server(
        Script::new()
            .respond(sql("c3", "SELECT id, title, status FROM todos"))
            .text("Still there."),
    );
    env.run_ok(&second, &["resume", &id[..8], "what is left to do?"]);
    let last = second.requests().last().unwrap().clone();
    assert_eq!(
        tool_result(&last, "c3"),
        "1 row(s) returned:\n\n| id | title | status |\n| --- | --- | --- |\n| t1 | Write tests | pending |"
    );
    audit_clean(&events);
}

/// A local HTTP server: `/page` (counted), `/hop` redirecting to `localhost`.
fn http_server() -> (u16, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let hits = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = std::sync::Arc::clone(&hits);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            let _ = reader.read_line(&mut line);
            loop {
                let mut header = String::new();
                if reader.read_line(&mut header).unwrap_or(0) == 0 || header == "\r\n" {
                    break;
                }
            }
            let (status, extra, body) = if line.contains(" /page ") {
                counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                (
                    "200 OK",
                    "Content-Type: text/html\r\n".to_owned(),
                    "<h1>Local</h1><p>page</p>",
                )
            } else {
                (
                    "302 Found",
                    format!("Location: http://localhost:{port}/page\r\n"),
                    "",
                )
            };
            let _ = write!(
                stream,
                "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n{extra}\r\n{body}",
                body.len()
            );
        }
    });
    (port, hits)
}

#[test]
fn web_fetch_reaches_only_the_hosts_the_user_names() {
    let (port, hits) = http_server();
    let page = format!("http://127.0.0.1:{port}/page");
    let hop = format!("http://127.0.0.1:{port}/hop");
    let env = Env::new();
    let script = || {
        Script::new()
            .respond(call("c1", "web_fetch", json!({"url": page})))
            .respond(call("c2", "web_fetch", json!({"url": hop})))
            .text("Fetched.")
    };
    // Runs the script with `flags`; the last request the model got.
    let run = |flags: &[&str]| {
        let server = env.server(script());
        let args = [&["run"], flags, &["fetch"]].concat();
        env.run_ok(&server, &args);
        server.requests().last().unwrap().clone()
    };
    let page_hits = || hits.load(std::sync::atomic::Ordering::SeqCst);

    // Without a rule naming the host: refused as the runtime refuses it.
    let last = run(&["--allow-all-tools"]);
    let blocked = tool_result(&last, "c1");
    assert!(
        blocked.contains(&format!(
            "web_fetch URL \"{page}\" resolves to blocked address 127.0.0.1."
        )),
        "{blocked}"
    );
    assert_eq!(page_hits(), 0);

    // Named: fetched; the redirect to localhost (not named) is a request nobody can approve.
    let last = run(&["--allow-url", "127.0.0.1"]);
    assert_eq!(
        tool_result(&last, "c1"),
        format!("Contents of {page}:\n# Local\n\npage")
    );
    assert_eq!(
        tool_result(&last, "c2"),
        "Permission denied and could not request permission from user"
    );
    assert_eq!(page_hits(), 1);

    // Approved for every tool but not named: the redirect target is still a blocked address.
    let last = run(&["--allow-url", "127.0.0.1", "--allow-all-tools"]);
    let hop_text = tool_result(&last, "c2");
    assert!(
        hop_text.contains(&format!(
            "web_fetch URL \"http://localhost:{port}/page\" resolves to blocked address"
        )),
        "{hop_text}"
    );
    assert_eq!(page_hits(), 2);

    // Deny wins over allow.
    let last = run(&["--allow-url", "127.0.0.1", "--deny-url", "127.0.0.1"]);
    let denied = tool_result(&last, "c1");
    assert!(denied.contains("url(127.0.0.1)"), "{denied}");
    assert_eq!(page_hits(), 2);

    // A pattern that is no host is an error at start-up, naming it.
    let server = env.server(script());
    let out = env
        .cmd(&server, &["run", "--allow-url", "a*b", "fetch"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("a*b"));
}

#[test]
fn a_redirect_target_is_asked_for_as_its_own_url() {
    let (port, hits) = http_server();
    let hop = format!("http://127.0.0.1:{port}/hop");
    let target = format!("http://localhost:{port}/page");
    let env = Env::new();
    let server = env.server(
        Script::new()
            .respond(call("c1", "web_fetch", json!({"url": hop})))
            .text("Fetched."),
    );
    let args = [
        "run",
        "--allow-url",
        "127.0.0.1",
        "--allow-url",
        "localhost",
        "fetch",
    ];
    env.run_ok(&server, &args);
    let last = server.requests().last().unwrap().clone();
    assert_eq!(
        tool_result(&last, "c1"),
        format!("Contents of {target} (redirected from {hop}):\n# Local\n\npage")
    );
    assert_eq!(hits.load(std::sync::atomic::Ordering::SeqCst), 1);
    let (_, events) = env.only_session();
    let journal: Vec<Value> = std::fs::read_to_string(&events)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let asked: Vec<&Value> = journal
        .iter()
        .filter(|e| e["type"] == "permission.requested")
        .map(|e| &e["data"]["permissionRequest"])
        .collect();
    assert_eq!(asked.len(), 2, "{asked:?}");
    assert_eq!(asked[0]["url"], hop.as_str());
    assert_eq!(asked[0].get("redirectedFrom"), None);
    assert_eq!(asked[1]["url"], target.as_str());
    assert_eq!(asked[1]["redirectedFrom"], hop.as_str());
    assert_eq!(asked[1]["toolCallId"], "c1");
    let approved = journal
        .iter()
        .filter(|e| e["type"] == "permission.completed")
        .filter(|e| e["data"]["result"]["kind"] == "approved")
        .count();
    assert_eq!(approved, 2);
    audit_clean(&events);
}
