//! The names of JSON value types as the Copilot CLI's validation messages spell them
//! (`Expected string, received number`): shared by the MCP configuration's checks here and the
//! tools' argument checks in the loop.

use serde_json::Value;

/// `null`, `boolean`, `number`, `string`, `array` or `object`.
pub fn json_type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}
