//! An answer in Anthropic's Messages API format: a `message` with `text` and `tool_use`
//! content blocks, or its stream (`message_start`, `content_block_start`,
//! `content_block_delta` with `text_delta`/`input_json_delta`, `content_block_stop`,
//! `message_delta`, `message_stop`, and a `ping`), each as `event: TYPE` and `data: JSON`.

use serde_json::{Value, json};

use crate::answer::{Answer, thirds, words};

/// The stop reason of a Chat Completions finish reason.
fn stop_reason(finish_reason: &str) -> &str {
    match finish_reason {
        "tool_calls" => "tool_use",
        "length" => "max_tokens",
        "content_filter" => "refusal",
        _ => "end_turn",
    }
}

/// A call's `input`: its arguments as JSON, or the raw text when they are not JSON.
fn input(arguments: &str) -> Value {
    serde_json::from_str(arguments).unwrap_or_else(|_| Value::String(arguments.to_string()))
}

/// Every choice's text and tool calls as one message's blocks (the API has no choices).
fn blocks(answer: &Answer) -> Vec<Value> {
    let mut out = Vec::new();
    for choice in &answer.choices {
        if let Some(text) = choice.content.as_deref().filter(|t| !t.is_empty()) {
            out.push(json!({"type": "text", "text": text}));
        }
        for (id, name, arguments) in &choice.tool_calls {
            out.push(
                json!({"type": "tool_use", "id": id, "name": name, "input": input(arguments)}),
            );
        }
    }
    out
}

fn message(answer: &Answer, content: Vec<Value>, stop: Option<&str>, output_tokens: u64) -> Value {
    let (input_tokens, _) = answer.tokens();
    let cached = answer
        .usage
        .pointer("/prompt_tokens_details/cached_tokens")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    json!({
        "id": format!("msg_{}", answer.number),
        "type": "message",
        "role": "assistant",
        "model": answer.model,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": null,
        "usage": {"input_tokens": input_tokens, "cache_read_input_tokens": cached,
                  "cache_creation_input_tokens": 0, "output_tokens": output_tokens},
    })
}

/// The whole message.
pub(crate) fn whole(answer: &Answer) -> Value {
    let (_, output_tokens) = answer.tokens();
    message(
        answer,
        blocks(answer),
        Some(stop_reason(&answer.finish_reason)),
        output_tokens,
    )
}

/// The frames of the stream: body, end (`message_delta`, `message_stop`), and what an
/// endless answer repeats.
pub(crate) fn stream_frames(
    answer: &Answer,
    malformed: bool,
) -> (Vec<String>, Vec<String>, Vec<String>) {
    let frame = |event: Value| {
        let kind = event["type"].as_str().unwrap_or_default().to_string();
        format!("event: {kind}\ndata: {event}\n\n")
    };
    let mut body = vec![
        frame(json!({"type": "message_start", "message": message(answer, vec![], None, 1)})),
        frame(json!({"type": "ping"})),
    ];
    if malformed {
        body.push("event: content_block_delta\ndata: {\"type\": \"content_block_delta\", \"delta\": [ this is not JSON\n\n".to_string());
    }
    let mut index = 0u64;
    for choice in &answer.choices {
        if let Some(text) = choice.content.as_deref().filter(|t| !t.is_empty()) {
            body.push(frame(json!({"type": "content_block_start", "index": index,
                "content_block": {"type": "text", "text": ""}})));
            for piece in words(text) {
                body.push(frame(json!({"type": "content_block_delta", "index": index,
                    "delta": {"type": "text_delta", "text": piece}})));
            }
            body.push(frame(json!({"type": "content_block_stop", "index": index})));
            index += 1;
        }
        for (id, name, arguments) in &choice.tool_calls {
            body.push(frame(json!({"type": "content_block_start", "index": index,
                "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}})));
            body.push(frame(json!({"type": "content_block_delta", "index": index,
                "delta": {"type": "input_json_delta", "partial_json": ""}})));
            for piece in thirds(arguments) {
                body.push(frame(json!({"type": "content_block_delta", "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": piece}})));
            }
            body.push(frame(json!({"type": "content_block_stop", "index": index})));
            index += 1;
        }
    }
    let (_, output_tokens) = answer.tokens();
    let end = vec![
        frame(json!({"type": "message_delta",
            "delta": {"stop_reason": stop_reason(&answer.finish_reason), "stop_sequence": null},
            "usage": {"output_tokens": output_tokens}})),
        frame(json!({"type": "message_stop"})),
    ];
    let endless = vec![frame(json!({"type": "content_block_delta", "index": 0,
        "delta": {"type": "text_delta", "text": answer.endless_piece()}}))];
    (body, end, endless)
}
