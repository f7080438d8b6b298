//! What every HTTP provider's wire format shares: lenient fields, token usage under the
//! names the APIs use, and the error body.

use serde::Deserialize;
use serde::de::{DeserializeOwned, Deserializer};
use serde_json::Value;

use super::errors::quote;
use crate::Usage;

/// Reads a field leniently: a value of another type counts as absent.
pub(crate) fn lenient<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned,
{
    let value = Value::deserialize(deserializer)?;
    Ok(serde_json::from_value(value).ok())
}

/// `usage` in Chat Completions field names; the Responses API's (`input_tokens`,
/// `input_tokens_details`, ...) and Anthropic's (`cache_read_input_tokens`, ...) understood too.
#[derive(Debug, Default, Clone, Deserialize)]
pub(crate) struct WireUsage {
    #[serde(default, deserialize_with = "lenient")]
    pub prompt_tokens: Option<u64>,
    #[serde(default, deserialize_with = "lenient")]
    pub input_tokens: Option<u64>,
    #[serde(default, deserialize_with = "lenient")]
    pub completion_tokens: Option<u64>,
    #[serde(default, deserialize_with = "lenient")]
    pub output_tokens: Option<u64>,
    #[serde(default, deserialize_with = "lenient")]
    pub prompt_tokens_details: Option<PromptDetails>,
    #[serde(default, deserialize_with = "lenient")]
    pub completion_tokens_details: Option<CompletionDetails>,
    #[serde(default, deserialize_with = "lenient")]
    pub input_tokens_details: Option<PromptDetails>,
    #[serde(default, deserialize_with = "lenient")]
    pub output_tokens_details: Option<CompletionDetails>,
    #[serde(default, deserialize_with = "lenient")]
    pub cache_read_input_tokens: Option<u64>,
    #[serde(default, deserialize_with = "lenient")]
    pub cache_creation_input_tokens: Option<u64>,
}

/// `usage.prompt_tokens_details` (`input_tokens_details` of the Responses API).
#[derive(Debug, Default, Clone, Deserialize)]
pub(crate) struct PromptDetails {
    #[serde(default, deserialize_with = "lenient")]
    pub cached_tokens: Option<u64>,
    #[serde(default, deserialize_with = "lenient")]
    pub cache_write_tokens: Option<u64>,
    #[serde(default, deserialize_with = "lenient")]
    pub cache_creation_tokens: Option<u64>,
}

/// `usage.completion_tokens_details` (`output_tokens_details` of the Responses API).
#[derive(Debug, Default, Clone, Deserialize)]
pub(crate) struct CompletionDetails {
    #[serde(default, deserialize_with = "lenient")]
    pub reasoning_tokens: Option<u64>,
}

impl WireUsage {
    /// The engine's usage, with the call's duration.
    pub(crate) fn to_usage(&self, duration_ms: u64) -> Usage {
        let prompt = self
            .prompt_tokens_details
            .as_ref()
            .or(self.input_tokens_details.as_ref());
        let completion = self
            .completion_tokens_details
            .as_ref()
            .or(self.output_tokens_details.as_ref());
        Usage {
            input_tokens: self.prompt_tokens.or(self.input_tokens).unwrap_or(0),
            output_tokens: self.completion_tokens.or(self.output_tokens).unwrap_or(0),
            cache_read_tokens: prompt
                .and_then(|p| p.cached_tokens)
                .or(self.cache_read_input_tokens)
                .unwrap_or(0),
            cache_write_tokens: prompt
                .and_then(|p| p.cache_write_tokens.or(p.cache_creation_tokens))
                .or(self.cache_creation_input_tokens)
                .unwrap_or(0),
            reasoning_tokens: completion.and_then(|d| d.reasoning_tokens).unwrap_or(0),
            duration_ms,
            ..Usage::default()
        }
    }
}

/// An error body's message: `error.message`, or `error` as a string; `None` when `error` is
/// absent or null.
pub(crate) fn error_message(error: Option<&Value>) -> Option<String> {
    match error? {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        Value::Object(o) => Some(
            o.get("message")
                .and_then(Value::as_str)
                .map(str::to_string)
                .unwrap_or_else(|| quote(&Value::Object(o.clone()).to_string())),
        ),
        other => Some(quote(&other.to_string())),
    }
}

/// The body of an HTTP error answer.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct ErrorBody {
    #[serde(default)]
    pub error: Option<Value>,
    #[serde(default, deserialize_with = "lenient")]
    pub message: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    pub detail: Option<String>,
}

impl ErrorBody {
    /// The server's message in an error body, if the body is JSON that has one.
    pub(crate) fn message_of(body: &[u8]) -> Option<String> {
        let parsed: ErrorBody = serde_json::from_slice(body).ok()?;
        error_message(parsed.error.as_ref())
            .or(parsed.message)
            .or(parsed.detail)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn usage_fields() {
        let u: WireUsage =
            serde_json::from_value(json!({"prompt_tokens": 10, "completion_tokens": 5,
                    "prompt_tokens_details": {"cached_tokens": 3},
                    "completion_tokens_details": {"reasoning_tokens": 2}}))
            .unwrap();
        assert_eq!(
            u.to_usage(7),
            Usage {
                input_tokens: 10,
                output_tokens: 5,
                cache_read_tokens: 3,
                cache_write_tokens: 0,
                reasoning_tokens: 2,
                duration_ms: 7,
                ..Usage::default()
            }
        );
        let anthropic: WireUsage = serde_json::from_value(
            json!({"input_tokens": 4, "output_tokens": 1, "cache_read_input_tokens": 2, "cache_creation_input_tokens": 6}),
        )
        .unwrap();
        let u = anthropic.to_usage(0);
        assert_eq!(
            (u.input_tokens, u.cache_read_tokens, u.cache_write_tokens),
            (4, 2, 6)
        );
        let responses: WireUsage = serde_json::from_value(json!({"input_tokens": 9,
            "input_tokens_details": {"cached_tokens": 4}, "output_tokens": 3,
            "output_tokens_details": {"reasoning_tokens": 2}, "total_tokens": 12}))
        .unwrap();
        let u = responses.to_usage(0);
        assert_eq!(
            (
                u.input_tokens,
                u.output_tokens,
                u.cache_read_tokens,
                u.reasoning_tokens
            ),
            (9, 3, 4, 2)
        );
    }

    #[test]
    fn error_messages() {
        assert_eq!(
            ErrorBody::message_of(br#"{"error":{"message":"bad model"}}"#).as_deref(),
            Some("bad model")
        );
        assert_eq!(
            ErrorBody::message_of(br#"{"detail":"nope"}"#).as_deref(),
            Some("nope")
        );
        assert_eq!(ErrorBody::message_of(b"not json"), None);
        assert_eq!(error_message(Some(&Value::Null)), None);
    }
}
