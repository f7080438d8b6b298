//! `session.history.compact` and `infiniteSessions` over real TCP against the real server: a
//! manual compaction answers the schema's result and the next request carries the summary;
//! a provider's `maxPromptTokens` is the window the threshold is a share of; bad options are
//! refused by name.

use crate::common;

use common::{TestServer, create_params, journal_lines};
use serde_json::json;
use turnstile_scripted_model::{Script, ScriptedResponse, ScriptedServer};
use turnstile_server::rpc::codes;

#[tokio::test]
async fn a_manual_compaction_answers_the_result_and_the_next_request_carries_the_summary() {
    let model = ScriptedServer::start(Script::new().text("one").text("two").summary(
        ScriptedResponse::text("<overview>They said hello.</overview>"),
    ))
    .await
    .unwrap();
    let t = TestServer::start(|_| {}).await;
    let mut client = t.client().await;
    let created = client
        .ok("session.create", create_params(&model.url(), json!({})))
        .await;
    let id = created["sessionId"].as_str().unwrap().to_owned();
    client
        .ok(
            "session.sendAndWait",
            json!({"sessionId": id, "prompt": "hello"}),
        )
        .await;
    let result = client
        .ok(
            "session.history.compact",
            json!({"sessionId": id, "customInstructions": "the greeting", "tokenLimit": 4096}),
        )
        .await;
    assert_eq!(result["success"], true, "{result}");
    assert_eq!(result["messagesRemoved"], 2, "the prompt and the answer");
    assert_eq!(
        result["summaryContent"],
        "<overview>They said hello.</overview>"
    );
    assert!(result["tokensRemoved"].as_u64().unwrap() > 0);
    assert_eq!(
        result["contextWindow"]["messagesLength"], 2,
        "system and summary"
    );
    assert!(result["contextWindow"]["tokenLimit"].as_u64().unwrap() > 0);
    client
        .ok(
            "session.sendAndWait",
            json!({"sessionId": id, "prompt": "again"}),
        )
        .await;
    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    let next = requests[2]["messages"].as_array().unwrap();
    assert_eq!(next.len(), 3, "system, summary, the new prompt: {next:?}");
    let summary = next[1]["content"].as_str().unwrap();
    assert!(
        summary.contains("<user_message>\nhello\n</user_message>"),
        "{summary}"
    );
    assert!(summary.contains("<summary>\n<overview>They said hello.</overview>\n</summary>"));
    let lines = journal_lines(&t.journal(&id));
    let complete = lines
        .iter()
        .find(|l| l["type"] == "session.compaction_complete")
        .unwrap();
    assert_eq!(complete["data"]["trigger"], "manual");
    assert_eq!(complete["data"]["customInstructions"], "the greeting");
    assert_eq!(
        complete["data"]["tokenLimit"], 4096,
        "the window it targets, recorded"
    );
    assert_eq!(
        lines
            .iter()
            .filter(|l| l["type"] == "session.compaction_start")
            .count(),
        1
    );

    let bad = client
        .err(
            "session.history.compact",
            json!({"sessionId": id, "trigger": "threshold"}),
        )
        .await;
    assert_eq!(bad["code"], codes::INVALID_PARAMS);
    assert!(
        bad["message"]
            .as_str()
            .unwrap()
            .contains("manual, model_switch")
    );
}

#[tokio::test]
async fn the_providers_prompt_limit_is_the_window_and_thresholds_are_checked() {
    let model = ScriptedServer::start(
        Script::new()
            .text("a long answer ".repeat(600))
            .text("short")
            .summary(ScriptedResponse::text(
                "<overview>A long answer.</overview>",
            )),
    )
    .await
    .unwrap();
    let t = TestServer::start(|_| {}).await;
    let mut client = t.client().await;
    let bad = client
        .err(
            "session.create",
            create_params(
                &model.url(),
                json!({"infiniteSessions": {"backgroundCompactionThreshold": 1.5}}),
            ),
        )
        .await;
    assert_eq!(bad["code"], codes::INVALID_PARAMS);
    assert!(
        bad["message"]
            .as_str()
            .unwrap()
            .contains("infiniteSessions.backgroundCompactionThreshold"),
        "{bad}"
    );
    let mut params = create_params(
        &model.url(),
        json!({"infiniteSessions": {"enabled": true, "backgroundCompactionThreshold": 0.5}}),
    );
    // The system prompt and tools are about 3 000 tokens: the long answer (about 1 800) pushes
    // the second request past half of this window, the first stays under it.
    params["provider"]["maxPromptTokens"] = json!(8000);
    let created = client.ok("session.create", params).await;
    let id = created["sessionId"].as_str().unwrap().to_owned();
    for prompt in ["first", "second"] {
        client
            .ok(
                "session.sendAndWait",
                json!({"sessionId": id, "prompt": prompt, "requestHeaders": {"X-Trace-Id": prompt}}),
            )
            .await;
    }
    let lines = journal_lines(&t.journal(&id));
    let start = lines
        .iter()
        .find(|l| l["type"] == "session.compaction_start")
        .unwrap_or_else(|| {
            let sizes: Vec<usize> = model
                .requests()
                .iter()
                .map(|r| r.to_string().len() / 4)
                .collect();
            panic!(
                "no compaction: {:?}, request tokens {sizes:?}",
                common::types(&lines)
            )
        });
    assert_eq!(start["data"]["tokenLimit"], 8000);
    assert_eq!(start["data"]["trigger"], "threshold");
    assert_eq!(model.requests().len(), 3, "two turns and one summary call");
    // The summary call is one of the second message's model calls: its headers go with it.
    let summary_call = model
        .recorded()
        .into_iter()
        .filter(|r| r.method == "POST")
        .find(|r| {
            r.body
                .to_string()
                .contains("The history is being compacted")
        })
        .expect("the summary request");
    assert_eq!(summary_call.header("x-trace-id"), Some("second"));
    assert_eq!(summary_call.header("x-initiator"), Some("agent"));
}
