//! `exit_plan_mode` over real TCP against the real server and the scripted model: offered only
//! to a message in plan mode of a client that reviews plans, the client asked with
//! `exitPlanMode.request`, the review announced, and the decision read by the model in the
//! runtime's words (and kept in the journal).

use crate::common;

use common::{TestServer, create, is_idle, journal_lines};
use serde_json::{Value, json};
use turnstile_scripted_model::{Script, ScriptedServer};

fn offered(model: &ScriptedServer) -> Vec<Vec<String>> {
    model
        .recorded()
        .iter()
        .filter(|r| r.method == "POST")
        .map(|r| {
            r.body["tools"]
                .as_array()
                .map(|tools| {
                    tools
                        .iter()
                        .map(|t| {
                            t["function"]["name"]
                                .as_str()
                                .unwrap_or_default()
                                .to_owned()
                        })
                        .collect()
                })
                .unwrap_or_default()
        })
        .collect()
}

#[tokio::test]
async fn a_plan_is_reviewed_by_the_client_and_the_model_reads_the_decision() {
    let model = ScriptedServer::start(
        Script::new()
            .text("nothing to plan")
            .tool_call(
                "exit_plan_mode",
                json!({"summary": "Add greeting.txt", "actions": ["autopilot", "interactive", "exit_only"], "recommendedAction": "interactive"}),
            )
            .text("approved"),
    )
    .await
    .unwrap();
    let t = TestServer::start(|c| c.permissions.allow_all = true).await;
    let mut client = t.client().await;
    let id = create(
        &mut client,
        &model.url(),
        json!({"requestExitPlanMode": true}),
    )
    .await;
    std::fs::write(
        t.dir.path().join("state").join(&id).join("plan.md"),
        "# Plan\n",
    )
    .unwrap();

    // Outside plan mode the tool is not offered.
    client
        .ok("session.send", json!({"sessionId": id, "prompt": "hello"}))
        .await;
    client.events_until(common::no_answers, is_idle).await;

    client
        .ok(
            "session.send",
            json!({"sessionId": id, "prompt": "plan it", "agentMode": "plan"}),
        )
        .await;
    let mut asked = Vec::new();
    let events = client
        .events_until(
            |method, params| {
                asked.push((method.to_owned(), params.clone()));
                json!({"approved": true, "selectedAction": "interactive", "feedback": "go"})
            },
            is_idle,
        )
        .await;
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].0, "exitPlanMode.request");
    assert_eq!(
        asked[0].1,
        json!({"sessionId": id, "summary": "Add greeting.txt", "planContent": "# Plan\n",
               "actions": ["autopilot", "interactive", "exit_only"], "recommendedAction": "interactive"})
    );
    let requested: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "exit_plan_mode.requested")
        .collect();
    let completed: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "exit_plan_mode.completed")
        .collect();
    assert_eq!(requested.len(), 1);
    assert_eq!(requested[0]["ephemeral"], true);
    assert_eq!(requested[0]["data"]["planContent"], "# Plan\n");
    assert_eq!(
        completed[0]["data"],
        json!({"approved": true, "selectedAction": "interactive", "feedback": "go",
               "requestId": requested[0]["data"]["requestId"]})
    );

    let tools = offered(&model);
    assert!(
        !tools[0].iter().any(|n| n == "exit_plan_mode"),
        "{:?}",
        tools[0]
    );
    assert!(
        tools[1].iter().any(|n| n == "exit_plan_mode"),
        "{:?}",
        tools[1]
    );
    let last = model
        .recorded()
        .into_iter()
        .rfind(|r| r.method == "POST")
        .unwrap();
    let told = last.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "tool")
        .unwrap()["content"]
        .clone();
    assert_eq!(
        told,
        "Plan approved! Exited plan mode.\n\nYou are now in interactive mode. Start implementing the plan now, in this same response. Approving the plan is your go-signal, so do not stop to ask whether to proceed or wait for another message."
    );
    let journal = journal_lines(&t.journal(&id));
    assert!(
        !journal
            .iter()
            .any(|e| e["type"] == "exit_plan_mode.requested"),
        "ephemeral"
    );
    let done = journal
        .iter()
        .find(|e| e["type"] == "tool.execution_complete")
        .unwrap();
    assert_eq!(done["data"]["result"]["content"], told);
    t.stop().await;
}
