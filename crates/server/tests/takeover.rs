//! A session taken over by another server process: handed over when idle (its clients see it
//! end, and their goodbye still succeeds), refused naming the holder when it stays busy. Two servers on one state root, real
//! TCP, real flocks (two opens of the lock file conflict as two processes would), the real
//! handover socket. Timeouts are failure guards only.

use crate::common;

use std::time::Duration;

use common::{TestServer, create_params, is_idle, journal_lines, no_answers, types};
use serde_json::{Value, json};
use turnstile_scripted_model::{Script, ScriptedServer};
use turnstile_server::rpc::codes;

#[tokio::test]
async fn an_idle_session_is_handed_over_to_the_process_that_resumes_it() {
    let model = ScriptedServer::start(Script::new().text("one").text("two"))
        .await
        .unwrap();
    let holder = TestServer::start(|_| {}).await;
    let taker = TestServer::beside(&holder, |_| {}).await;
    let mut a = holder.client().await;
    let created = a
        .ok("session.create", create_params(&model.url(), json!({})))
        .await;
    let id = created["sessionId"].as_str().unwrap().to_owned();
    a.ok("session.send", json!({"sessionId": id, "prompt": "first"}))
        .await;
    a.events_until(no_answers, is_idle).await;

    let mut b = taker.client().await;
    b.ok(
        "session.resume",
        create_params(&model.url(), json!({"sessionId": id})),
    )
    .await;
    assert_eq!(holder.server.open_sessions(), 0, "the holder let it go");
    assert_eq!(taker.server.open_sessions(), 1);

    // The holder's client saw the session end, and hears why afterwards.
    let seen = a
        .events_until(no_answers, |e| e["type"] == "session.shutdown")
        .await;
    assert_eq!(
        types(&seen).last().map(String::as_str),
        Some("session.shutdown")
    );
    let error = a
        .err("session.send", json!({"sessionId": id, "prompt": "mine?"}))
        .await;
    assert_eq!(error["code"], codes::SESSION_NOT_FOUND);
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("another process took it over"),
        "{error}"
    );
    // Its goodbye still succeeds (the official clients close their handle on exit), and
    // leaves the taker's session alone.
    let bye = a.ok("session.destroy", json!({"sessionId": id})).await;
    assert_eq!(bye, json!({"success": true}));
    assert_eq!(taker.server.open_sessions(), 1);
    // A session this server never had is still unknown.
    let unknown = "0b5e0a3c-1d2e-4f60-8a7b-9c0d1e2f3a4b";
    let refused = a
        .err("session.destroy", json!({"sessionId": unknown}))
        .await;
    assert_eq!(refused["code"], codes::SESSION_NOT_FOUND);

    // The taker goes on; the journal shows one writer after the other, never two.
    b.ok("session.send", json!({"sessionId": id, "prompt": "second"}))
        .await;
    b.events_until(no_answers, is_idle).await;
    let lines = journal_lines(&holder.journal(&id));
    let kinds: Vec<&str> = lines.iter().map(|l| l["type"].as_str().unwrap()).collect();
    let shutdown = kinds.iter().position(|k| *k == "session.shutdown").unwrap();
    let resume = kinds.iter().position(|k| *k == "session.resume").unwrap();
    assert_eq!(resume, shutdown + 1, "{kinds:?}");
    for pair in lines.windows(2) {
        assert_eq!(pair[1]["parentId"], pair[0]["id"], "one chain, one writer");
    }
    // The handover socket lives only while a server holds the session.
    let dir = holder.dir.path().join("state").join(&id);
    assert!(dir.join("handover.sock").exists());
    taker.stop().await;
    assert!(!dir.join("handover.sock").exists());
    holder.stop().await;
}

#[tokio::test]
async fn a_session_that_stays_busy_is_not_handed_over_and_the_holder_is_named() {
    let model = ScriptedServer::start(
        Script::new()
            .tool_call("wait_forever", json!({}))
            .text("never"),
    )
    .await
    .unwrap();
    let holder = TestServer::start(|_| {}).await;
    let taker = TestServer::beside(&holder, |c| {
        c.takeover_wait = Duration::from_millis(200);
    })
    .await;
    let mut a = holder.client().await;
    let created = a
        .ok(
            "session.create",
            create_params(
                &model.url(),
                json!({"tools": [{"name": "wait_forever", "description": "never answers", "skipPermission": true}]}),
            ),
        )
        .await;
    let id = created["sessionId"].as_str().unwrap().to_owned();
    a.ok("session.send", json!({"sessionId": id, "prompt": "wait"}))
        .await;
    // Busy for as long as the client does not answer its tool call.
    a.events_until(no_answers, |e: &Value| {
        e["type"] == "external_tool.requested"
    })
    .await;

    let mut b = taker.client().await;
    let error = b
        .err(
            "session.resume",
            create_params(&model.url(), json!({"sessionId": id})),
        )
        .await;
    assert_eq!(error["code"], codes::SESSION_IN_USE, "{error}");
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains(&format!("pid {}", std::process::id())) && message.contains("stayed busy"),
        "{message}"
    );
    assert_eq!(holder.server.open_sessions(), 1, "the holder kept it");
    assert_eq!(taker.server.open_sessions(), 0);
    taker.stop().await;
    holder.stop().await;
}

#[tokio::test]
async fn a_session_under_a_path_longer_than_a_socket_address_is_still_handed_over() {
    let model = ScriptedServer::start(Script::new().text("one").text("two"))
        .await
        .unwrap();
    // Deeper than the 107 bytes a socket address holds, as a state dir in a build tree is.
    let deep = tempfile::tempdir().unwrap();
    let root = deep.path().join("a-state-directory-nested".repeat(4));
    let holder =
        TestServer::start(|c| c.state_root = turnstile_journal::StateRoot::new(root.clone())).await;
    let taker = TestServer::beside(&holder, |c| {
        c.state_root = turnstile_journal::StateRoot::new(root.clone())
    })
    .await;
    let mut a = holder.client().await;
    let created = a
        .ok("session.create", create_params(&model.url(), json!({})))
        .await;
    let id = created["sessionId"].as_str().unwrap().to_owned();
    let socket = root.join(&id).join("handover.sock");
    assert!(socket.as_os_str().len() > 107, "{}", socket.display());
    a.ok("session.send", json!({"sessionId": id, "prompt": "first"}))
        .await;
    a.events_until(no_answers, is_idle).await;
    assert!(socket.exists(), "bound in the session directory itself");

    let mut b = taker.client().await;
    b.ok(
        "session.resume",
        create_params(&model.url(), json!({"sessionId": id})),
    )
    .await;
    assert_eq!(holder.server.open_sessions(), 0, "the holder let it go");
    b.ok("session.send", json!({"sessionId": id, "prompt": "second"}))
        .await;
    b.events_until(no_answers, is_idle).await;
    taker.stop().await;
    assert!(!socket.exists());
    holder.stop().await;
}

#[tokio::test]
async fn a_holder_that_dies_while_asked_is_waited_for_and_the_resume_goes_on() {
    let model = ScriptedServer::start(Script::new().text("one").text("two"))
        .await
        .unwrap();
    let first = TestServer::start(|_| {}).await;
    let mut a = first.client().await;
    let created = a
        .ok("session.create", create_params(&model.url(), json!({})))
        .await;
    let id = created["sessionId"].as_str().unwrap().to_owned();
    a.ok("session.send", json!({"sessionId": id, "prompt": "first"}))
        .await;
    a.events_until(no_answers, is_idle).await;
    let dir = first.dir.path().join("state").join(&id);
    // Every session closed, its lock released; the state directory stays.
    first.server.shutdown().await;

    // A holder being killed: it holds the lock and accepts on its socket, then its socket
    // closes with no answer and, a moment later, its lock goes, as a process's files do when
    // it dies.
    let lock = turnstile_journal::writer_lock::WriterLock::acquire(&dir.join("writer.lock"))
        .expect("the dying holder's lock");
    let listener = std::os::unix::net::UnixListener::bind(dir.join("handover.sock")).unwrap();
    let dying = std::thread::spawn(move || {
        let (connection, _) = listener.accept().unwrap();
        std::thread::sleep(Duration::from_millis(100));
        drop(connection);
        std::thread::sleep(Duration::from_millis(150));
        drop(lock);
    });

    let taker = TestServer::beside(&first, |_| {}).await;
    let mut b = taker.client().await;
    b.ok(
        "session.resume",
        create_params(&model.url(), json!({"sessionId": id})),
    )
    .await;
    dying.join().unwrap();
    b.ok("session.send", json!({"sessionId": id, "prompt": "second"}))
        .await;
    b.events_until(no_answers, is_idle).await;
    taker.stop().await;
    first.stop().await;
}
