//! Reading tool arguments leniently: models send numbers as strings and
//! booleans as "true", so accept both rather than fail a usable call.

use serde_json::{Map, Value};

use super::ToolFailure;

/// The arguments as an object; anything else is a bad call.
pub(crate) fn object(args: &Value) -> Result<&Map<String, Value>, ToolFailure> {
    match args {
        Value::Object(map) => Ok(map),
        // Some models send `null` for a call without arguments.
        Value::Null => Ok(empty_map()),
        _ => Err(ToolFailure::invalid(
            "The tool arguments must be a JSON object.",
        )),
    }
}

fn empty_map() -> &'static Map<String, Value> {
    static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
    EMPTY.get_or_init(Map::new)
}

/// The JSON type name of `value` as the Copilot CLI's argument checks say it ("number",
/// "array", ...): `Expected string, received number`. Shared with the MCP configuration's
/// checks in `turnstile-home`.
pub use turnstile_home::json_type_name;

/// A required string parameter.
pub(crate) fn required_str<'a>(args: &'a Value, name: &str) -> Result<&'a str, ToolFailure> {
    optional_str(args, name)?
        .ok_or_else(|| ToolFailure::invalid(format!("Missing required parameter '{name}'.")))
}

/// An optional string parameter (`null` counts as absent).
pub(crate) fn optional_str<'a>(
    args: &'a Value,
    name: &str,
) -> Result<Option<&'a str>, ToolFailure> {
    match object(args)?.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(ToolFailure::invalid(format!(
            "Parameter '{name}' must be a string."
        ))),
    }
}

/// An optional boolean parameter; accepts `"true"`/`"false"` too.
pub(crate) fn optional_bool(args: &Value, name: &str) -> Result<Option<bool>, ToolFailure> {
    match object(args)?.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(Value::String(s)) if s.eq_ignore_ascii_case("true") => Ok(Some(true)),
        Some(Value::String(s)) if s.eq_ignore_ascii_case("false") => Ok(Some(false)),
        Some(_) => Err(ToolFailure::invalid(format!(
            "Parameter '{name}' must be a boolean."
        ))),
    }
}

/// An optional number parameter; accepts numeric strings too.
pub(crate) fn optional_f64(args: &Value, name: &str) -> Result<Option<f64>, ToolFailure> {
    let bad = || ToolFailure::invalid(format!("Parameter '{name}' must be a number."));
    match object(args)?.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => n.as_f64().map(Some).ok_or_else(bad),
        Some(Value::String(s)) => s.trim().parse::<f64>().map(Some).map_err(|_| bad()),
        Some(_) => Err(bad()),
    }
}

/// An optional non-negative integer parameter; accepts numeric strings too.
pub(crate) fn optional_usize(args: &Value, name: &str) -> Result<Option<usize>, ToolFailure> {
    let bad = || {
        ToolFailure::invalid(format!(
            "Parameter '{name}' must be a non-negative integer."
        ))
    };
    match object(args)?.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => match n.as_u64() {
            Some(v) => usize::try_from(v).map(Some).map_err(|_| bad()),
            // 3.0 is a fine integer; 3.5 is not.
            None => match n.as_f64() {
                Some(f) if f >= 0.0 && f.fract() == 0.0 && f <= usize::MAX as f64 => {
                    Ok(Some(f as usize))
                }
                _ => Err(bad()),
            },
        },
        Some(Value::String(s)) => s.trim().parse::<usize>().map(Some).map_err(|_| bad()),
        Some(_) => Err(bad()),
    }
}

/// A string-or-list-of-strings parameter (`paths` is either in the wild).
pub(crate) fn string_list(args: &Value, name: &str) -> Result<Option<Vec<String>>, ToolFailure> {
    let bad = || {
        ToolFailure::invalid(format!(
            "Parameter '{name}' must be a string or an array of strings."
        ))
    };
    match object(args)?.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(vec![s.clone()])),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| v.as_str().map(str::to_owned).ok_or_else(bad))
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some(_) => Err(bad()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lenient_scalars() {
        let a = json!({"n": "3", "b": "true", "f": 2.0, "s": "x", "l": "one"});
        assert_eq!(optional_usize(&a, "n").unwrap(), Some(3));
        assert_eq!(optional_usize(&a, "f").unwrap(), Some(2));
        assert_eq!(optional_bool(&a, "b").unwrap(), Some(true));
        assert_eq!(optional_str(&a, "missing").unwrap(), None);
        assert_eq!(string_list(&a, "l").unwrap(), Some(vec!["one".to_owned()]));
        assert!(required_str(&a, "missing").is_err());
        assert!(optional_bool(&a, "s").is_err());
        assert!(object(&json!([1])).is_err());
        assert!(optional_usize(&json!({"n": -1}), "n").is_err());
        assert!(optional_usize(&json!({"n": 1.5}), "n").is_err());
    }
}
