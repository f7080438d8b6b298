//! An answer in the OpenAI Responses API format: a `response` object with output items
//! (`message`, `function_call`), or its stream of typed events (`response.created`,
//! `response.output_item.added`, `response.output_text.delta`,
//! `response.function_call_arguments.delta`, `response.output_item.done`,
//! `response.completed`), each as `event: TYPE` and `data: JSON`.

use serde_json::{Value, json};

use crate::answer::{Answer, thirds, words};

/// The whole `response` object.
pub(crate) fn whole(answer: &Answer) -> Value {
    response(answer, "completed_or_incomplete", items(answer))
}

/// The output items: per choice its message (when it has text, or nothing else) and its
/// function calls.
fn items(answer: &Answer) -> Vec<Value> {
    let mut out = Vec::new();
    for (c, choice) in answer.choices.iter().enumerate() {
        let text = choice.content.clone().unwrap_or_default();
        if !text.is_empty() || choice.tool_calls.is_empty() {
            out.push(message(answer, c, &text, "completed"));
        }
        for (i, (id, name, arguments)) in choice.tool_calls.iter().enumerate() {
            out.push(function_call(
                answer,
                c,
                i,
                id,
                name,
                arguments,
                "completed",
            ));
        }
    }
    out
}

fn message(answer: &Answer, choice: usize, text: &str, status: &str) -> Value {
    json!({
        "type": "message",
        "id": format!("msg_{}_{choice}", answer.number),
        "status": status,
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    })
}

fn function_call(
    answer: &Answer,
    choice: usize,
    call: usize,
    id: &str,
    name: &str,
    arguments: &str,
    status: &str,
) -> Value {
    json!({
        "type": "function_call",
        "id": format!("fc_{}_{choice}_{call}", answer.number),
        "call_id": id,
        "name": name,
        "arguments": arguments,
        "status": status,
    })
}

/// A `response` object; `status` `completed_or_incomplete` follows the finish reason.
fn response(answer: &Answer, status: &str, output: Vec<Value>) -> Value {
    let (status, incomplete) = match (status, answer.finish_reason.as_str()) {
        ("completed_or_incomplete", "length") => {
            ("incomplete", json!({"reason": "max_output_tokens"}))
        }
        ("completed_or_incomplete", "content_filter") => {
            ("incomplete", json!({"reason": "content_filter"}))
        }
        ("completed_or_incomplete", _) => ("completed", Value::Null),
        (other, _) => (other, Value::Null),
    };
    let (input, output_tokens) = answer.tokens();
    let usage = if status == "in_progress" {
        Value::Null
    } else {
        json!({
            "input_tokens": input,
            "input_tokens_details": {"cached_tokens": answer.usage.pointer("/prompt_tokens_details/cached_tokens").cloned().unwrap_or(json!(0))},
            "output_tokens": output_tokens,
            "output_tokens_details": {"reasoning_tokens": answer.usage.pointer("/completion_tokens_details/reasoning_tokens").cloned().unwrap_or(json!(0))},
            "total_tokens": input + output_tokens,
        })
    };
    json!({
        "id": format!("resp_{}", answer.number),
        "object": "response",
        "created_at": answer.created,
        "status": status,
        "model": answer.model,
        "output": output,
        "incomplete_details": incomplete,
        "error": null,
        "usage": usage,
    })
}

/// The frames of the stream: body (everything before the final event), end (the final
/// `response.completed` or `response.incomplete`), and what an endless answer repeats.
pub(crate) fn stream_frames(
    answer: &Answer,
    malformed: bool,
) -> (Vec<String>, Vec<String>, Vec<String>) {
    let mut seq = 0u64;
    let mut frame = |mut event: Value| {
        let kind = event["type"].as_str().unwrap_or_default().to_string();
        event["sequence_number"] = seq.into();
        seq += 1;
        format!("event: {kind}\ndata: {event}\n\n")
    };
    let mut body = vec![
        frame(
            json!({"type": "response.created", "response": response(answer, "in_progress", vec![])}),
        ),
        frame(
            json!({"type": "response.in_progress", "response": response(answer, "in_progress", vec![])}),
        ),
    ];
    if malformed {
        body.push("event: response.output_text.delta\ndata: {\"type\": \"response.output_text.delta\", \"delta\": [ this is not JSON\n\n".to_string());
    }
    let mut index = 0u64;
    for (c, choice) in answer.choices.iter().enumerate() {
        let text = choice.content.clone().unwrap_or_default();
        if !text.is_empty() || choice.tool_calls.is_empty() {
            let item_id = format!("msg_{}_{c}", answer.number);
            body.push(frame(json!({"type": "response.output_item.added", "output_index": index,
                "item": {"type": "message", "id": item_id, "status": "in_progress", "role": "assistant", "content": []}})));
            body.push(frame(json!({"type": "response.content_part.added", "item_id": item_id, "output_index": index,
                "content_index": 0, "part": {"type": "output_text", "text": "", "annotations": []}})));
            for piece in words(&text) {
                body.push(frame(
                    json!({"type": "response.output_text.delta", "item_id": item_id,
                    "output_index": index, "content_index": 0, "delta": piece}),
                ));
            }
            body.push(frame(
                json!({"type": "response.output_text.done", "item_id": item_id,
                "output_index": index, "content_index": 0, "text": text}),
            ));
            body.push(frame(json!({"type": "response.content_part.done", "item_id": item_id, "output_index": index,
                "content_index": 0, "part": {"type": "output_text", "text": text, "annotations": []}})));
            body.push(frame(
                json!({"type": "response.output_item.done", "output_index": index,
                "item": message(answer, c, &text, "completed")}),
            ));
            index += 1;
        }
        for (i, (id, name, arguments)) in choice.tool_calls.iter().enumerate() {
            let item_id = format!("fc_{}_{c}_{i}", answer.number);
            body.push(frame(
                json!({"type": "response.output_item.added", "output_index": index,
                "item": function_call(answer, c, i, id, name, "", "in_progress")}),
            ));
            for piece in thirds(arguments) {
                body.push(frame(
                    json!({"type": "response.function_call_arguments.delta",
                    "item_id": item_id, "output_index": index, "delta": piece}),
                ));
            }
            body.push(frame(
                json!({"type": "response.function_call_arguments.done",
                "item_id": item_id, "output_index": index, "arguments": arguments}),
            ));
            body.push(frame(
                json!({"type": "response.output_item.done", "output_index": index,
                "item": function_call(answer, c, i, id, name, arguments, "completed")}),
            ));
            index += 1;
        }
    }
    let last = response(answer, "completed_or_incomplete", items(answer));
    let kind = if last["status"] == "incomplete" {
        "response.incomplete"
    } else {
        "response.completed"
    };
    let end = vec![frame(json!({"type": kind, "response": last}))];
    let endless = vec![frame(json!({"type": "response.output_text.delta",
        "item_id": format!("msg_{}_0", answer.number), "output_index": 0, "content_index": 0,
        "delta": answer.endless_piece()}))];
    (body, end, endless)
}
