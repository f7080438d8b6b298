//! `view` of an image, as the Copilot CLI does it: the tool answers `Viewed image file
//! successfully.`, records the picture in `result.binaryResultsForLlm`, and the next request
//! carries it in a user message right after the tool results; a resumed session builds the
//! same request from its journal.

use crate::common;

use base64::Engine;
use common::{Fixture, data};
use serde_json::{Value, json};
use turnstile_loop::{SendOptions, SessionHandle};
use turnstile_scripted_model::Script;

/// The 1x1 PNG the official clients' suite attaches.
const PIXEL_PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

/// The message of `request` right after its last tool result, and that result.
fn after_tool_results(request: &Value) -> (Value, Value) {
    let messages = request["messages"].as_array().unwrap();
    let last_tool = messages
        .iter()
        .rposition(|m| m["role"] == "tool")
        .expect("a tool result");
    (
        messages[last_tool].clone(),
        messages.get(last_tool + 1).cloned().unwrap_or(Value::Null),
    )
}

#[tokio::test]
async fn viewing_an_image_sends_the_picture_after_the_tool_results() {
    let script = Script::new()
        .tool_call("view", json!({"path": "pixel.png"}))
        .text("a yellow pixel")
        .text("still a yellow pixel");
    let fx = Fixture::start(script, |work| {
        let png = base64::engine::general_purpose::STANDARD
            .decode(PIXEL_PNG)
            .unwrap();
        std::fs::write(work.join("pixel.png"), png).unwrap();
    })
    .await;
    let path = fx.work.path().join("pixel.png").display().to_string();
    let session =
        SessionHandle::create(&fx.root, None, fx.base_parts(|c| c.streaming = false)).unwrap();
    let id = session.id();
    session
        .send_and_wait("Describe the image", SendOptions::default())
        .await
        .unwrap();
    session.shutdown().await.unwrap();

    let journal = fx.journal(id);
    let done = journal
        .iter()
        .find(|e| e.event_type.as_str() == "tool.execution_complete")
        .map(data)
        .unwrap();
    assert_eq!(done["success"], true, "{done}");
    assert_eq!(done["result"]["content"], "Viewed image file successfully.");
    assert_eq!(
        done["result"]["detailedContent"],
        format!("Viewed image file at path {path}")
    );
    assert_eq!(
        done["result"]["binaryResultsForLlm"],
        json!([{
            "type": "image",
            "data": PIXEL_PNG,
            "mimeType": "image/png",
            "description": format!("Image file at path {path}"),
        }])
    );

    let picture = json!({
        "role": "user",
        "content": [
            {"type": "text", "text": format!("Image file at path {path}")},
            {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{PIXEL_PNG}")}},
        ],
    });
    let requests = fx.server.requests();
    let (result, next) = after_tool_results(&requests[1]);
    assert_eq!(result["content"], "Viewed image file successfully.");
    assert_eq!(next, picture, "{:#}", requests[1]["messages"]);

    // Resumed, the journal alone gives the same history: the picture follows the result.
    let (session, _) =
        SessionHandle::resume(&fx.root, id, fx.base_parts(|c| c.streaming = false)).unwrap();
    session
        .send_and_wait("And now?", SendOptions::default())
        .await
        .unwrap();
    session.shutdown().await.unwrap();
    let requests = fx.server.requests();
    let (_, next) = after_tool_results(&requests[2]);
    assert_eq!(next, picture);
    fx.audit_clean(id);
}
