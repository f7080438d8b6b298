//! Answers routed by the request: a sub-agent's by its system prompt (`forSystem`), an
//! answer held until later requests have arrived (`afterRequests`).

use crate::common;

use std::time::Duration;

use common::*;
use serde_json::json;
use turnstile_scripted_model::{Script, ScriptedResponse, ScriptedServer};

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
