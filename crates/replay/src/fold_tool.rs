//! Reading a `tool.execution_complete` payload for the fold: only what the model sees next (the
//! result's `content`, or the error's `message`) and `success` are kept.
//!
//! The journal's payload type allocates every field (`detailedContent`, telemetry maps, ids),
//! which is most of a large fold's work. The lean mirror here has the same fields under the same
//! names and checks each one as strictly as the payload type does (a string is parsed as a string,
//! a JSON value as a value, duplicates and missing fields are errors) without keeping it. It may
//! be stricter, never looser: when it refuses a payload, the payload type reads it again, so a
//! warning carries the payload type's own words, and the fold's state is exactly what the full
//! payload type gives.

use std::fmt;

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use turnstile_journal::payload::ToolExecutionComplete;

use crate::audit::json;
use crate::fold_tool_fast::{Member, fast_outcome};

/// What the fold keeps of a tool result: the text the model sees and whether the tool succeeded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ToolOutcome {
    /// The result's `content`, else the error's `message`, else empty.
    pub(crate) content: String,
    /// `success` as written.
    pub(crate) success: bool,
    /// `content` is kept as written in the journal, escapes and all (see
    /// [`crate::fold_tool_fast::unescape`]).
    pub(crate) escaped: bool,
}

/// A payload read into a [`ToolOutcome`], or the payload type's error for it.
pub(crate) type ReadTool = Result<ToolOutcome, serde_json::Error>;

/// Reads the `data` of a `tool.execution_complete` event: exactly what deserializing
/// [`ToolExecutionComplete`] gives (same outcome, same error), most of the time without its
/// allocations.
pub(crate) fn read_tool_result(data: &str) -> ReadTool {
    let (mut stack, mut members, mut inner) = (Vec::new(), Vec::new(), Vec::new());
    match scan_tool_result(data, &mut stack, false, &mut members, &mut inner) {
        Some(outcome) => outcome,
        None => read_tool_result_serde(data),
    }
}

/// Validates `data` with the line check ([`json::scan_object`]), appends its top-level members
/// (for the lenient fields) to `members` and reads its outcome; `None` when it is not valid
/// JSON (then the line is not in the fast layout at all). With `lazy`, the outcome's `content`
/// may be kept escaped ([`ToolOutcome::escaped`]). `inner` is scratch space.
pub(crate) fn scan_tool_result(
    data: &str,
    stack: &mut Vec<u8>,
    lazy: bool,
    members: &mut Vec<Member>,
    inner: &mut Vec<Member>,
) -> Option<ReadTool> {
    let first = members.len();
    inner.clear();
    let base = data.as_ptr() as usize;
    let range = |k: &[u8], v: &[u8]| {
        let at = |s: &[u8]| s.as_ptr() as usize - base;
        [at(k), at(k) + k.len(), at(v), at(v) + v.len()]
    };
    let valid = json::scan_object_nested(
        data.as_bytes(),
        stack,
        &mut |k, v| members.push(range(k, v)),
        Some((b"\"result\"", &mut |k, v| inner.push(range(k, v)))),
    );
    if !valid {
        members.truncate(first);
        return None;
    }
    Some(match fast_outcome(data, &members[first..], inner, lazy) {
        Some(outcome) => Ok(outcome),
        None => read_tool_result_serde(data),
    })
}

/// [`read_tool_result`] by `serde_json` alone: the lean mirror, else the payload type.
pub(crate) fn read_tool_result_serde(data: &str) -> ReadTool {
    match serde_json::from_str::<LeanComplete>(data) {
        Ok(lean) => Ok(lean.into_outcome()),
        Err(_) => read_tool_result_full(data),
    }
}

/// The same through the journal's payload type alone (the reference the lean path is held to).
pub(crate) fn read_tool_result_full(data: &str) -> ReadTool {
    serde_json::from_str::<ToolExecutionComplete>(data).map(|p| ToolOutcome {
        content: match (p.result, p.error) {
            (Some(result), _) => result.content,
            (None, Some(error)) => error.message,
            (None, None) => String::new(),
        },
        success: p.success,
        escaped: false,
    })
}

/// [`ToolExecutionComplete`], field for field, keeping only what the fold reads.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
struct LeanComplete {
    tool_call_id: StrCheck,
    #[serde(default)]
    model: Option<StrCheck>,
    #[serde(default)]
    interaction_id: Option<StrCheck>,
    #[serde(default)]
    turn_id: Option<StrCheck>,
    #[serde(default)]
    rte: Option<bool>,
    success: bool,
    #[serde(default)]
    is_user_requested: Option<bool>,
    #[serde(default)]
    result: Option<LeanResult>,
    #[serde(default)]
    error: Option<LeanError>,
    #[serde(default)]
    mcp_meta: Option<ValueCheck>,
    #[serde(default)]
    tool_telemetry: Option<MapCheck>,
    #[serde(default)]
    tool_description: Option<ValueCheck>,
    #[serde(default)]
    sandboxed: Option<bool>,
    #[serde(default)]
    shell_execution: Option<LeanShellExecution>,
    #[serde(default)]
    parent_tool_call_id: Option<StrCheck>,
    #[serde(default)]
    fusion: Option<ValueCheck>,
}

impl LeanComplete {
    fn into_outcome(self) -> ToolOutcome {
        ToolOutcome {
            content: match (self.result, self.error) {
                (Some(result), _) => result.content,
                (None, Some(error)) => error.message,
                (None, None) => String::new(),
            },
            success: self.success,
            escaped: false,
        }
    }
}

/// `ToolResult`, field for field.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
struct LeanResult {
    content: String,
    #[serde(default)]
    detailed_content: Option<StrCheck>,
    #[serde(default)]
    contents: Option<SeqCheck>,
    #[serde(default)]
    binary_results_for_llm: Option<SeqCheck>,
    #[serde(default)]
    ui_resource: Option<ValueCheck>,
    #[serde(default)]
    structured_content: Option<ValueCheck>,
    #[serde(default)]
    citable_sources: Option<SeqCheck>,
    #[serde(default)]
    mcp_meta: Option<ValueCheck>,
}

/// `ToolError`, field for field.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
pub(crate) struct LeanError {
    pub(crate) message: String,
    #[serde(default)]
    code: Option<StrCheck>,
    #[serde(default)]
    remediation: Option<StrCheck>,
}

/// `ShellExecution`, field for field.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
pub(crate) struct LeanShellExecution {
    exit_code: i64,
}

/// A JSON string, parsed (escapes and surrogate pairs checked) as a `String` is, not kept.
pub(crate) struct StrCheck;

impl<'de> Deserialize<'de> for StrCheck {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_str(StrVisitor)
    }
}

struct StrVisitor;

impl Visitor<'_> for StrVisitor {
    type Value = StrCheck;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<StrCheck, E> {
        Ok(StrCheck)
    }
}

/// Any JSON value, parsed as `serde_json::Value` parses it (numbers in range, strings checked),
/// not kept.
pub(crate) struct ValueCheck;

impl<'de> Deserialize<'de> for ValueCheck {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ValueVisitor)
    }
}

/// A JSON array of values (`Vec<Value>`), not kept.
pub(crate) struct SeqCheck;

impl<'de> Deserialize<'de> for SeqCheck {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_seq(ValueVisitor).map(|_| SeqCheck)
    }
}

/// A JSON object of values (`Map<String, Value>`), not kept.
pub(crate) struct MapCheck;

impl<'de> Deserialize<'de> for MapCheck {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(ValueVisitor).map(|_| MapCheck)
    }
}

/// The key `serde_json::Value` reads as a raw value in disguise: refused here (the payload type
/// then decides), so nothing subtle is accepted on the lean path.
const RAW_VALUE_TOKEN: &str = "$serde_json::private::RawValue";

/// A map key, parsed as a string; refuses [`RAW_VALUE_TOKEN`].
struct KeyCheck;

impl<'de> DeserializeSeed<'de> for KeyCheck {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_str(self)
    }
}

impl Visitor<'_> for KeyCheck {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string key")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<(), E> {
        if key == RAW_VALUE_TOKEN {
            return Err(E::custom("a raw value key"));
        }
        Ok(())
    }
}

struct ValueVisitor;

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = ValueCheck;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any valid JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<ValueCheck, E> {
        Ok(ValueCheck)
    }

    fn visit_i64<E>(self, _: i64) -> Result<ValueCheck, E> {
        Ok(ValueCheck)
    }

    fn visit_u64<E>(self, _: u64) -> Result<ValueCheck, E> {
        Ok(ValueCheck)
    }

    fn visit_f64<E>(self, _: f64) -> Result<ValueCheck, E> {
        Ok(ValueCheck)
    }

    fn visit_str<E>(self, _: &str) -> Result<ValueCheck, E> {
        Ok(ValueCheck)
    }

    fn visit_unit<E>(self) -> Result<ValueCheck, E> {
        Ok(ValueCheck)
    }

    fn visit_none<E>(self) -> Result<ValueCheck, E> {
        Ok(ValueCheck)
    }

    fn visit_some<D: de::Deserializer<'de>>(self, d: D) -> Result<ValueCheck, D::Error> {
        ValueCheck::deserialize(d)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<ValueCheck, A::Error> {
        while seq.next_element::<ValueCheck>()?.is_some() {}
        Ok(ValueCheck)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ValueCheck, A::Error> {
        while map.next_key_seed(KeyCheck)?.is_some() {
            map.next_value::<ValueCheck>()?;
        }
        Ok(ValueCheck)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Payloads at the edges of the schema: each read the lean way gives what the payload type
    /// gives, error text included.
    #[test]
    fn lean_reads_what_the_payload_type_reads() {
        let cases = [
            r#"{"toolCallId":"a","success":true,"result":{"content":"x\n\"y\""}}"#,
            r#"{"toolCallId":"a","success":false,"error":{"message":"boom","code":"E"}}"#,
            r#"{"toolCallId":"a","success":true}"#,
            r#"{"toolCallId":"a","success":true,"result":null,"error":null}"#,
            r#"{"toolCallId":"a","success":true,"result":{"content":"c","detailedContent":"\ud800"}}"#,
            r#"{"toolCallId":"a","success":true,"result":{"content":"c","detailedContent":"\ud83d\ude80"}}"#,
            r#"{"toolCallId":"a","success":true,"result":{"content":"\udc00"}}"#,
            r#"{"toolCallId":"a","success":true,"result":{"content":5}}"#,
            r#"{"toolCallId":"a","success":true,"result":{"detailedContent":"d"}}"#,
            r#"{"toolCallId":"a","success":true,"result":{"content":"c","detailedContent":7}}"#,
            r#"{"toolCallId":"a","success":true,"result":{"content":"c","content":"d"}}"#,
            r#"{"toolCallId":"a","toolCallId":"b","success":true}"#,
            r#"{"toolCallId":"a","success":"0"}"#,
            r#"{"success":true}"#,
            r#"{"toolCallId":"a"}"#,
            r#"{"toolCallId":"a","success":true,"model":5}"#,
            r#"{"toolCallId":"a","success":true,"model":null,"turnId":"\ud800x"}"#,
            r#"{"toolCallId":"a","success":true,"rte":"yes"}"#,
            r#"{"toolCallId":"a","success":true,"toolTelemetry":{"n":1e400}}"#,
            r#"{"toolCallId":"a","success":true,"toolTelemetry":{"n":1e300,"m":[1,-2,0.5]}}"#,
            r#"{"toolCallId":"a","success":true,"toolTelemetry":[1]}"#,
            r#"{"toolCallId":"a","success":true,"toolTelemetry":{"\ud800":1}}"#,
            r#"{"toolCallId":"a","success":true,"mcpMeta":null,"fusion":{"$serde_json::private::RawValue":"[1"}}"#,
            r#"{"toolCallId":"a","success":true,"fusion":{"$serde_json::private::RawValue":"[1]"}}"#,
            r#"{"toolCallId":"a","success":true,"shellExecution":{"exitCode":99999999999999999999}}"#,
            r#"{"toolCallId":"a","success":true,"shellExecution":{"exitCode":-3}}"#,
            r#"{"toolCallId":"a","success":true,"result":{"content":"c","contents":{"a":1}}}"#,
            r#"{"toolCallId":"a","success":true,"result":{"content":"c","contents":[{"t":"\ud800"}]}}"#,
            r#"{"toolCallId":"a","success":true,"unknown":"\ud800","other":[1e999]}"#,
            r#"{"tool\u0043allId":"a","success":true}"#,
            r#"{"toolCallId":"a","success":true,"error":{"code":"E"}}"#,
            r#"{"toolCallId":"a","success":true,"error":{"message":"m","remediation":1}}"#,
            r#"[1]"#,
        ];
        for data in cases {
            let deep = format!(
                r#"{{"toolCallId":"a","success":true,"fusion":{}1{}}}"#,
                "[".repeat(200),
                "]".repeat(200)
            );
            for data in [data, deep.as_str()] {
                let full = read_tool_result_full(data).map_err(|e| e.to_string());
                let lean = read_tool_result(data).map_err(|e| e.to_string());
                assert_eq!(lean, full, "{data}");
                let serde = read_tool_result_serde(data).map_err(|e| e.to_string());
                assert_eq!(serde, full, "{data}");
            }
        }
    }

    /// The lean path is taken for the payloads the runtime writes (the fallback is for the
    /// odd ones): no second read of an ordinary result.
    #[test]
    fn ordinary_results_stay_on_the_lean_path() {
        let data = r#"{"toolCallId":"call_1","model":"gpt-4.1","interactionId":"i","turnId":"0","success":true,"result":{"content":"a\tb","detailedContent":"diff \u2028"},"toolTelemetry":{"properties":{"type":"x"},"metrics":{"n":3}}}"#;
        assert!(serde_json::from_str::<LeanComplete>(data).is_ok());
        let (members, result_members) = crate::fold_tool_fast::tests::members(data);
        let fast = fast_outcome(data, &members, &result_members, false);
        assert_eq!(fast, read_tool_result_full(data).ok());
    }
}
