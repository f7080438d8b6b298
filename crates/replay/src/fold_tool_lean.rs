//! The lean mirror of a `tool.execution_complete` payload: the payload types' structs field for
//! field, each field checked as strictly as the payload type checks it and none kept but what
//! the fold reads ([`ToolOutcome`]).
//!
//! Its own file because both readings of a tool result build on it: the serde one
//! (`fold_tool.rs`) deserializes [`LeanComplete`], and the fast one (`fold_tool_fast.rs`) checks
//! single fields with the same check types, so the two cannot check a field differently.

use std::fmt;

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};

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

/// [`ToolExecutionComplete`], field for field, keeping only what the fold reads.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
pub(crate) struct LeanComplete {
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
    pub(crate) fn into_outcome(self) -> ToolOutcome {
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
