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

use turnstile_journal::payload::ToolExecutionComplete;

use crate::fold_tool_fast::{Member, fast_outcome};
use crate::fold_tool_lean::{LeanComplete, ToolOutcome};
use crate::raw::json;

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
