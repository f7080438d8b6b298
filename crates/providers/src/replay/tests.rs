//! The replay provider's unit tests: recorded calls answered in order, failures, resumed
//! conversations, sub-agents, summaries, history steps and path maps.

use super::*;
use serde_json::json;
use turnstile_journal::payload::{
    Abort, AssistantMessage, AssistantTurnEnd, AssistantTurnStart, CompactionComplete,
    SessionError, UserMessage,
};

fn turn(id: &str) -> Event {
    Event::new(
        &AssistantTurnStart {
            turn_id: id.into(),
            ..Default::default()
        },
        None,
    )
}

fn turn_end(id: &str) -> Event {
    Event::new(
        &AssistantTurnEnd {
            turn_id: id.into(),
            ..Default::default()
        },
        None,
    )
}

/// A successful compaction that replaced 3 messages.
fn compacted() -> Event {
    Event::new(
        &CompactionComplete {
            success: true,
            summary_content: Some("s".into()),
            pre_compaction_messages_length: Some(3),
            ..Default::default()
        },
        None,
    )
}

fn user(text: &str) -> Event {
    Event::new(
        &UserMessage {
            content: text.into(),
            ..Default::default()
        },
        None,
    )
}

fn answer(text: &str) -> Event {
    Event::new(
        &AssistantMessage {
            message_id: text.into(),
            content: text.into(),
            ..Default::default()
        },
        None,
    )
}

fn request(history: Vec<ChatMessage>) -> ChatRequest {
    ChatRequest {
        messages: history,
        ..Default::default()
    }
}

fn said(text: &str) -> ChatMessage {
    ChatMessage::user(text)
}

fn answered(text: &str) -> ChatMessage {
    ChatMessage::Assistant {
        content: Some(text.into()),
        tool_calls: vec![],
    }
}

async fn ask(
    provider: &ReplayProvider,
    request: &ChatRequest,
) -> Result<ModelResponse, ModelError> {
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    provider
        .complete(request, tx, CancellationToken::new())
        .await
}

#[tokio::test]
async fn recorded_failures_fail_again_and_resumed_conversations_align() {
    let error = Event::new(
        &SessionError {
            error_type: "http".into(),
            message: "context too long".into(),
            status_code: Some(400),
            ..Default::default()
        },
        None,
    );
    let end = turn_end("0");
    let provider = ReplayProvider::from_events(vec![
        user("one"),
        turn("0"),
        answer("first"),
        user("two"),
        turn("0"),
        end,
        error,
        user("three"),
        turn("0"),
        answer("second"),
    ])
    .unwrap();
    assert_eq!(provider.remaining(), 3);
    let fresh = request(vec![said("one")]);
    assert_eq!(ask(&provider, &fresh).await.unwrap().content, "first");
    let failed = ask(&provider, &fresh).await.unwrap_err();
    assert_eq!(
        (failed.error_type(), failed.status_code),
        ("http", Some(400))
    );
    assert_eq!(failed.message, "context too long");

    // A new provider asked to continue after "three" starts at the matching call.
    let resumed = ReplayProvider::from_events(vec![
        user("one"),
        turn("0"),
        answer("first"),
        user("two"),
        turn("0"),
        Event::new(
            &Abort {
                reason: "user_initiated".into(),
            },
            None,
        ),
        user("three"),
        turn("0"),
        answer("second"),
    ])
    .unwrap();
    let history = request(vec![
        said("one"),
        answered("first"),
        said("two"),
        said("three"),
    ]);
    assert_eq!(ask(&resumed, &history).await.unwrap().content, "second");
    assert_eq!(resumed.remaining(), 0);

    let elsewhere = ReplayProvider::from_events(vec![user("one"), turn("0"), answer("a")]).unwrap();
    let lost = request(vec![said("x"), answered("y"), said("z"), said("w")]);
    // No point of the recording: no history steps, and the call fails.
    assert!(elsewhere.recorded_history(&lost).unwrap().is_empty());
    let e = ask(&elsewhere, &lost).await.unwrap_err();
    assert!(e.message.contains("not a point of the recording"), "{e}");
}

#[tokio::test]
async fn a_turn_that_ended_without_outcome_is_no_call() {
    let end = Event::new(
        &AssistantTurnEnd {
            turn_id: "0".into(),
            ..Default::default()
        },
        None,
    );
    let provider =
        ReplayProvider::from_events(vec![user("go"), turn("0"), end, turn("1"), answer("a")])
            .unwrap();
    assert_eq!(provider.remaining(), 1);
    let req = request(vec![said("go")]);
    assert_eq!(ask(&provider, &req).await.unwrap().content, "a");
}

#[tokio::test]
async fn an_unanswered_call_waits_for_cancellation() {
    let provider = ReplayProvider::from_events(vec![user("go"), turn("0")]).unwrap();
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let cancel = CancellationToken::new();
    let req = request(vec![said("go")]);
    let call = provider.complete(&req, tx, cancel.clone());
    cancel.cancel();
    assert_eq!(call.await.unwrap_err().kind, ModelErrorKind::Cancelled);
}

fn agent_answer(agent: &str, text: &str) -> Event {
    let mut event = answer(text);
    event.agent_id = Some(agent.into());
    event
}

fn from(origin: CallOrigin) -> ChatRequest {
    ChatRequest {
        messages: vec![said("go")],
        origin,
        ..Default::default()
    }
}

#[tokio::test]
async fn each_agent_and_each_summary_call_gets_its_own_recorded_answers() {
    let summary = |success: bool, text: &str| {
        Event::new(
            &CompactionComplete {
                success,
                summary_content: success.then(|| text.to_owned()),
                error: (!success).then(|| format!("the summary request failed: {text}")),
                status_code: (!success).then_some(500),
                ..Default::default()
            },
            None,
        )
    };
    let provider = ReplayProvider::from_events(vec![
        user("go"),
        turn("0"),
        answer("main 1"),
        agent_answer("a", "a 1"),
        agent_answer("b", "b 1"),
        agent_answer("a", "a 2"),
        summary(false, "busy"),
        turn("1"),
        answer("main 2"),
        summary(true, "<overview>so far</overview>"),
    ])
    .unwrap();
    assert_eq!(provider.remaining(), 2);
    let agent = |id: &str| from(CallOrigin::Agent(id.into()));
    // The agents ask in another order than they were recorded in, between the main calls.
    assert_eq!(ask(&provider, &agent("b")).await.unwrap().content, "b 1");
    assert_eq!(
        ask(&provider, &from(CallOrigin::Main))
            .await
            .unwrap()
            .content,
        "main 1"
    );
    assert_eq!(ask(&provider, &agent("a")).await.unwrap().content, "a 1");
    assert_eq!(ask(&provider, &agent("a")).await.unwrap().content, "a 2");
    let spent = ask(&provider, &agent("a")).await.unwrap_err();
    assert!(
        spent.message.contains("sub-agent a (2 were recorded)"),
        "{spent}"
    );
    let failed = ask(&provider, &from(CallOrigin::Summary))
        .await
        .unwrap_err();
    assert_eq!(
        (failed.message.as_str(), failed.status_code),
        ("busy", Some(500))
    );
    assert_eq!(
        ask(&provider, &from(CallOrigin::Main))
            .await
            .unwrap()
            .content,
        "main 2"
    );
    let summary = ask(&provider, &from(CallOrigin::Summary)).await.unwrap();
    assert_eq!(summary.content, "<overview>so far</overview>");
    assert!(summary.tool_calls.is_empty());
    let none = ask(&provider, &from(CallOrigin::Summary))
        .await
        .unwrap_err();
    assert!(
        none.message
            .contains("no more compactions (2 were recorded)"),
        "{none}"
    );
}

/// The steps before each main call, as `(compactions, truncations)`, calling in order.
async fn steps_before_each_call(provider: &ReplayProvider) -> Vec<(usize, usize)> {
    let mut steps = Vec::new();
    while provider.remaining() > 0 {
        let history = provider.recorded_history(&from(CallOrigin::Main)).unwrap();
        let compactions = history
            .iter()
            .filter(|s| matches!(s, HistoryStep::Compact { .. }))
            .count();
        steps.push((compactions, history.len() - compactions));
        ask(provider, &from(CallOrigin::Main)).await.unwrap();
    }
    steps
}

#[tokio::test]
async fn compactions_and_truncations_come_before_the_call_that_first_saw_them() {
    let end = || turn_end("0");
    let complete = compacted;
    let truncation = Event::with_raw_data(
        "session.truncation".into(),
        serde_json::value::to_raw_value(&json!({"messagesRemovedDuringTruncation": 2})).unwrap(),
        None,
    );
    let provider = ReplayProvider::from_events(vec![
        user("one"),
        turn("0"),
        answer("a"),
        end(),
        // Between turns (turnstile's): the next call.
        complete(),
        turn("1"),
        // Inside a turn (the runtime's, behind it): the second turn start after it.
        complete(),
        answer("b"),
        end(),
        turn("2"),
        answer("c"),
        end(),
        turn("3"),
        truncation,
        answer("d"),
        end(),
        turn("4"),
        complete(),
        answer("e"),
        end(),
        // Or the next prompt, when it comes first.
        user("two"),
        turn("0"),
        answer("f"),
    ])
    .unwrap();
    assert_eq!(
        steps_before_each_call(&provider).await,
        [(0, 0), (1, 0), (0, 0), (1, 1), (0, 0), (1, 0)]
    );
    assert!(matches!(
        ReplayProvider::from_events(vec![user("x"), turn("0"), complete()])
            .unwrap()
            .summaries[0],
        Reply::Summary(_)
    ));
}

#[tokio::test]
async fn a_resumed_conversation_gets_the_history_steps_of_its_own_point() {
    let provider = ReplayProvider::from_events(vec![
        user("one"),
        turn("0"),
        answer("a"),
        turn_end("0"),
        user("two"),
        compacted(),
        turn("0"),
        answer("b"),
    ])
    .unwrap();
    let resumed = request(vec![said("one"), answered("a"), said("two")]);
    // Asked before the first call, as the loop asks: the steps before the call at this
    // point (the compaction), not those before the recording's first call (none).
    let steps = provider.recorded_history(&resumed).unwrap();
    assert!(
        matches!(
            steps.as_slice(),
            [HistoryStep::Compact { replaced: Some(3) }]
        ),
        "{steps:?}"
    );
    assert_eq!(ask(&provider, &resumed).await.unwrap().content, "b");
    assert_eq!(provider.remaining(), 0);
}

#[tokio::test]
async fn path_map_rewrites_tool_arguments_at_path_boundaries() {
    let message = Event::new(
        &AssistantMessage {
            message_id: "m".into(),
            tool_requests: Some(vec![turnstile_journal::payload::ToolRequest {
                tool_call_id: "c".into(),
                name: "view".into(),
                arguments: Some(
                    json!({"path": "/rec/p/a.txt", "other": ["/rec/project", "/rec/p"]}),
                ),
                ..Default::default()
            }]),
            ..Default::default()
        },
        None,
    );
    let provider = ReplayProvider::from_events(vec![user("go"), turn("0"), message])
        .unwrap()
        .with_path_map("/rec/p", "/tmp/w");
    let answer = ask(&provider, &request(vec![said("go")])).await.unwrap();
    assert_eq!(
        answer.tool_calls[0].arguments_value(),
        json!({"path": "/tmp/w/a.txt", "other": ["/rec/project", "/tmp/w"]})
    );
}

#[tokio::test]
async fn a_call_left_unanswered_takes_no_recorded_call() {
    // The runtime's truncate left "two" without its call: the next recorded call is three's.
    let provider = ReplayProvider::from_events(vec![
        user("one"),
        turn("0"),
        answer("first"),
        user("two"),
        user("three"),
        turn("0"),
        answer("third"),
    ])
    .unwrap();
    assert_eq!(
        ask(&provider, &request(vec![said("one")]))
            .await
            .unwrap()
            .content,
        "first"
    );
    provider.leave_next_call_unanswered(true);
    let two = request(vec![said("one"), answered("first"), said("two")]);
    assert!(provider.recorded_history(&two).unwrap().is_empty());
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let cancel = CancellationToken::new();
    // The call is made (and waits) before it is cancelled.
    let (result, ()) = tokio::join!(provider.complete(&two, tx, cancel.clone()), async {
        tokio::task::yield_now().await;
        cancel.cancel();
    });
    assert_eq!(result.unwrap_err().kind, ModelErrorKind::Cancelled);
    assert_eq!(provider.remaining(), 1, "no recorded call was taken");
    // Only the one call: the next is answered from the recording again.
    let three = request(vec![
        said("one"),
        answered("first"),
        said("two"),
        said("three"),
    ]);
    assert_eq!(ask(&provider, &three).await.unwrap().content, "third");
    // Taken back before any call, nothing is left unanswered.
    provider.leave_next_call_unanswered(true);
    provider.leave_next_call_unanswered(false);
    assert!(
        ask(&provider, &three).await.is_err(),
        "no more recorded calls"
    );
}
