//! OTLP attribute values, and the bound on the texts a span carries.

use opentelemetry_proto::tonic::common::v1::{AnyValue, ArrayValue, KeyValue, any_value::Value};

/// The most bytes of one text attribute (a message's content, a tool's arguments or result,
/// an error message): a longer text is cut at a character boundary and ends with `…`, so one
/// huge tool result cannot make a span, or a request, follow it.
pub const MAX_TEXT_BYTES: usize = 16 * 1024;

/// A string attribute.
pub fn string(key: &str, value: impl Into<String>) -> KeyValue {
    kv(key, Value::StringValue(value.into()))
}

/// A string attribute cut at [`MAX_TEXT_BYTES`].
pub fn text(key: &str, value: &str) -> KeyValue {
    string(key, clip(value))
}

/// An integer attribute.
pub fn int(key: &str, value: u64) -> KeyValue {
    kv(
        key,
        Value::IntValue(i64::try_from(value).unwrap_or(i64::MAX)),
    )
}

/// A boolean attribute.
pub fn boolean(key: &str, value: bool) -> KeyValue {
    kv(key, Value::BoolValue(value))
}

/// A string-array attribute (`gen_ai.response.finish_reasons`).
pub fn strings(key: &str, values: &[&str]) -> KeyValue {
    let values = values
        .iter()
        .map(|v| AnyValue {
            value: Some(Value::StringValue((*v).to_owned())),
        })
        .collect();
    kv(key, Value::ArrayValue(ArrayValue { values }))
}

fn kv(key: &str, value: Value) -> KeyValue {
    KeyValue {
        key: key.to_owned(),
        value: Some(AnyValue { value: Some(value) }),
        ..KeyValue::default()
    }
}

/// `text` cut to at most [`MAX_TEXT_BYTES`] at a character boundary, marked with `…`.
pub fn clip(text: &str) -> String {
    if text.len() <= MAX_TEXT_BYTES {
        return text.to_owned();
    }
    let mut end = MAX_TEXT_BYTES - '…'.len_utf8();
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// Sets `key` to `value`, replacing an earlier value of the same key.
pub fn set(attributes: &mut Vec<KeyValue>, value: KeyValue) {
    match attributes.iter_mut().find(|a| a.key == value.key) {
        Some(old) => *old = value,
        None => attributes.push(value),
    }
}

/// The string value of `key`, if set.
pub fn get_str<'a>(attributes: &'a [KeyValue], key: &str) -> Option<&'a str> {
    attributes.iter().find(|a| a.key == key).and_then(|a| {
        match a.value.as_ref()?.value.as_ref()? {
            Value::StringValue(s) => Some(s.as_str()),
            _ => None,
        }
    })
}

/// The integer value of `key`, if set.
pub fn get_int(attributes: &[KeyValue], key: &str) -> Option<i64> {
    attributes.iter().find(|a| a.key == key).and_then(|a| {
        match a.value.as_ref()?.value.as_ref()? {
            Value::IntValue(i) => Some(*i),
            _ => None,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_text_is_cut_at_a_character_boundary() {
        let long = "é".repeat(MAX_TEXT_BYTES);
        let cut = clip(&long);
        assert!(cut.len() <= MAX_TEXT_BYTES);
        assert!(cut.ends_with('…'));
        assert_eq!(clip("short"), "short");
    }
}
