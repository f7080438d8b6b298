//! One answer of the script as the server sends it: ids assigned, choices, usage and finish
//! reason, rendered as Chat Completions chunks or a whole response; and how a text is cut into
//! the pieces a stream delivers (`words`, `thirds`), shared by the other wire formats.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use crate::script::ScriptedResponse;

/// Everything one successful answer says, ids assigned.
pub(crate) struct Answer {
    /// The completion id (`chatcmpl-N`); other formats put their own prefix on `N`.
    pub id: String,
    /// Which answer of the script this is, from 1.
    pub number: usize,
    pub created: u64,
    pub model: String,
    /// The choices; the first is the response's own content and tool calls.
    pub choices: Vec<AnswerChoice>,
    /// In Chat Completions names (`prompt_tokens`, ...).
    pub usage: Value,
    /// In Chat Completions terms (`stop`, `tool_calls`, `length`, ...).
    pub finish_reason: String,
}

/// One choice of an answer, ids assigned.
pub(crate) struct AnswerChoice {
    pub content: Option<String>,
    /// `(id, name, arguments text)`.
    pub tool_calls: Vec<(String, String, String)>,
}

impl Answer {
    pub(crate) fn new(
        tool_calls: &AtomicU64,
        response: &ScriptedResponse,
        index: usize,
        model: String,
        request_len: usize,
    ) -> Self {
        let calls = |calls: &[crate::script::ScriptedToolCall]| -> Vec<(String, String, String)> {
            calls
                .iter()
                .map(|tc| {
                    let id = tc.id.clone().unwrap_or_else(|| {
                        format!("call_{}", tool_calls.fetch_add(1, Ordering::SeqCst) + 1)
                    });
                    (id, tc.name.clone(), tc.arguments_text())
                })
                .collect()
        };
        let mut choices = vec![AnswerChoice {
            content: response.content.clone(),
            tool_calls: calls(&response.tool_calls),
        }];
        for more in &response.more_choices {
            choices.push(AnswerChoice {
                content: more.content.clone(),
                tool_calls: calls(&more.tool_calls),
            });
        }
        let output_len = choices
            .iter()
            .map(|c| {
                c.content.as_deref().map_or(0, str::len)
                    + c.tool_calls
                        .iter()
                        .map(|(_, n, a)| n.len() + a.len())
                        .sum::<usize>()
            })
            .sum::<usize>();
        let any_calls = choices.iter().any(|c| !c.tool_calls.is_empty());
        let usage = match &response.usage {
            Some(Value::Object(map)) => {
                let mut map = map.clone();
                if !map.contains_key("total_tokens") {
                    let total = map
                        .get("prompt_tokens")
                        .and_then(Value::as_u64)
                        .unwrap_or(0)
                        + map
                            .get("completion_tokens")
                            .and_then(Value::as_u64)
                            .unwrap_or(0);
                    map.insert("total_tokens".into(), total.into());
                }
                Value::Object(map)
            }
            Some(other) => other.clone(),
            None => {
                let prompt = (request_len as u64 / 4).max(1);
                let completion = (output_len as u64 / 4).max(1);
                json!({"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion})
            }
        };
        let finish_reason = response.finish_reason.clone().unwrap_or_else(|| {
            if !any_calls {
                "stop".into()
            } else {
                "tool_calls".into()
            }
        });
        Answer {
            id: format!("chatcmpl-{}", index + 1),
            number: index + 1,
            created: now_secs(),
            model,
            choices,
            usage,
            finish_reason,
        }
    }

    pub(crate) fn chunk(&self, choice: usize, delta: Value, finish_reason: Option<&str>) -> String {
        json!({
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [{"index": choice, "delta": delta, "finish_reason": finish_reason}],
        })
        .to_string()
    }

    /// The finish reason of one choice: the scripted one for the first, else by its calls.
    pub(crate) fn finish_of(&self, choice: usize) -> &str {
        if choice == 0 {
            &self.finish_reason
        } else if self.choices[choice].tool_calls.is_empty() {
            "stop"
        } else {
            "tool_calls"
        }
    }

    /// The `data:` payloads of the stream before the finish chunks: the role, then each
    /// choice's text word by word and tool calls in pieces.
    pub(crate) fn body_events(&self, malformed: bool) -> Vec<String> {
        let mut events = vec![self.chunk(0, json!({"role": "assistant", "content": ""}), None)];
        if malformed {
            events.push(format!(
                "{{\"id\": \"{}\", \"choices\": [ this is not JSON",
                self.id
            ));
        }
        for (c, choice) in self.choices.iter().enumerate() {
            if c > 0 {
                events.push(self.chunk(c, json!({"role": "assistant", "content": ""}), None));
            }
            if let Some(content) = &choice.content {
                for piece in words(content) {
                    events.push(self.chunk(c, json!({"content": piece}), None));
                }
            }
            for (i, (id, name, arguments)) in choice.tool_calls.iter().enumerate() {
                events.push(self.chunk(
                    c,
                    json!({"tool_calls": [{"index": i, "id": id, "type": "function", "function": {"name": name, "arguments": ""}}]}),
                    None,
                ));
                for piece in thirds(arguments) {
                    events.push(self.chunk(
                        c,
                        json!({"tool_calls": [{"index": i, "function": {"arguments": piece}}]}),
                        None,
                    ));
                }
            }
        }
        events
    }

    /// The `data:` payloads that end the stream: a finish chunk per choice, usage, `[DONE]`.
    pub(crate) fn end_events(&self, include_usage: bool) -> Vec<String> {
        let mut events = Vec::new();
        for c in 0..self.choices.len() {
            events.push(self.chunk(c, json!({}), Some(self.finish_of(c))));
        }
        if include_usage {
            events.push(
                json!({
                    "id": self.id,
                    "object": "chat.completion.chunk",
                    "created": self.created,
                    "model": self.model,
                    "choices": [],
                    "usage": self.usage,
                })
                .to_string(),
            );
        }
        events.push("[DONE]".into());
        events
    }

    pub(crate) fn whole(&self) -> Value {
        let choices: Vec<Value> = self
            .choices
            .iter()
            .enumerate()
            .map(|(c, choice)| {
                let mut message = serde_json::Map::new();
                message.insert("role".into(), "assistant".into());
                let content = match &choice.content {
                    Some(text) => Value::String(text.clone()),
                    None if !choice.tool_calls.is_empty() => Value::Null,
                    None => Value::String(String::new()),
                };
                message.insert("content".into(), content);
                if !choice.tool_calls.is_empty() {
                    let calls: Vec<Value> = choice
                        .tool_calls
                        .iter()
                        .map(|(id, name, arguments)| {
                            json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments}})
                        })
                        .collect();
                    message.insert("tool_calls".into(), Value::Array(calls));
                }
                json!({"index": c, "message": message, "finish_reason": self.finish_of(c)})
            })
            .collect();
        json!({
            "id": self.id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.model,
            "choices": choices,
            "usage": self.usage,
        })
    }

    /// Tokens of the usage in Chat Completions names: `(prompt, completion)`.
    pub(crate) fn tokens(&self) -> (u64, u64) {
        let get = |name: &str| self.usage.get(name).and_then(Value::as_u64).unwrap_or(0);
        (get("prompt_tokens"), get("completion_tokens"))
    }

    /// The text repeated by an endless answer.
    pub(crate) fn endless_piece(&self) -> String {
        match self.choices[0].content.as_deref() {
            Some(text) if !text.is_empty() => text.to_string(),
            _ => "endless ".to_string(),
        }
    }
}

/// Splits text into word pieces, each with the whitespace before it: "a b" -> ["a", " b"].
pub(crate) fn words(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut prev_ws = false;
    for (i, c) in text.char_indices() {
        let ws = c.is_whitespace();
        if ws && !prev_ws && i > start {
            out.push(&text[start..i]);
            start = i;
        }
        prev_ws = ws;
    }
    if start < text.len() {
        out.push(&text[start..]);
    }
    out
}

/// Splits text into (up to) three pieces on char boundaries.
pub(crate) fn thirds(text: &str) -> Vec<&str> {
    let n = text.chars().count();
    if n == 0 {
        return Vec::new();
    }
    let per = n.div_ceil(3);
    let mut out = Vec::new();
    let mut start = 0;
    for (count, (i, _)) in text.char_indices().enumerate() {
        if count > 0 && count % per == 0 {
            out.push(&text[start..i]);
            start = i;
        }
    }
    out.push(&text[start..]);
    out
}

/// Seconds since the Unix epoch (a completion's `created`).
fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_keep_leading_whitespace() {
        assert_eq!(words("There are 3"), vec!["There", " are", " 3"]);
        assert_eq!(words(" a  b\n"), vec![" a", "  b", "\n"]);
        assert_eq!(words(""), Vec::<&str>::new());
    }

    #[test]
    fn thirds_split_on_char_boundaries() {
        assert_eq!(thirds("abcdefg"), vec!["abc", "def", "g"]);
        assert_eq!(thirds("{}"), vec!["{", "}"]);
        assert_eq!(thirds("ééé"), vec!["é", "é", "é"]);
        assert_eq!(thirds(""), Vec::<&str>::new());
        assert_eq!(thirds("abc").concat(), "abc");
    }
}
