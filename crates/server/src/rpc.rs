//! JSON-RPC 2.0 messages: parsing what a peer sends, building what we send, and the errors.

use serde_json::{Map, Value, json};

/// Error codes: the JSON-RPC 2.0 ones and this server's application codes (-32000..-32099).
pub mod codes {
    /// The body is not JSON (or the frame was unusable).
    pub const PARSE_ERROR: i64 = -32700;
    /// The JSON is not a valid request (batches, missing `jsonrpc`/`method`, oversized frames).
    pub const INVALID_REQUEST: i64 = -32600;
    /// No such method.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// The params do not have the method's shape or name something unsupported.
    pub const INVALID_PARAMS: i64 = -32602;
    /// Something failed inside the server.
    pub const INTERNAL_ERROR: i64 = -32603;
    /// The session does not exist, or is not open on this connection.
    pub const SESSION_NOT_FOUND: i64 = -32001;
    /// The session is held by another client or process, or already exists.
    pub const SESSION_IN_USE: i64 = -32002;
    /// The connection has not authenticated (`connect` with the connection token).
    pub const UNAUTHORIZED: i64 = -32003;
    /// The session's journal or task failed.
    pub const SESSION_FAILED: i64 = -32004;
}

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message} (JSON-RPC error {code})")]
pub struct RpcError {
    /// The code.
    pub code: i64,
    /// What went wrong, for a human.
    pub message: String,
    /// Extra structured detail (boxed: errors travel in `Result`s and should stay small).
    pub data: Option<Box<Value>>,
}

impl RpcError {
    /// An error with this code and message.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// -32700.
    pub fn parse(message: impl Into<String>) -> Self {
        Self::new(codes::PARSE_ERROR, message)
    }

    /// -32600.
    pub fn invalid_request(message: impl Into<String>) -> Self {
        Self::new(codes::INVALID_REQUEST, message)
    }

    /// -32601 for `method`.
    pub fn method_not_found(method: &str) -> Self {
        Self::new(
            codes::METHOD_NOT_FOUND,
            format!("method not found: {method} (see docs/protocol.md for the supported methods)"),
        )
    }

    /// -32602.
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(codes::INVALID_PARAMS, message)
    }

    /// -32603.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(codes::INTERNAL_ERROR, message)
    }

    /// The error object as JSON.
    pub fn to_value(&self) -> Value {
        let mut obj = Map::new();
        obj.insert("code".into(), json!(self.code));
        obj.insert("message".into(), json!(self.message));
        if let Some(data) = &self.data {
            obj.insert("data".into(), (**data).clone());
        }
        Value::Object(obj)
    }

    fn from_value(value: &Value) -> Self {
        RpcError {
            code: value["code"].as_i64().unwrap_or(codes::INTERNAL_ERROR),
            message: value["message"]
                .as_str()
                .unwrap_or("error without a message")
                .to_owned(),
            data: value.get("data").cloned().map(Box::new),
        }
    }
}

/// A message received from the peer.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// A call that wants a response.
    Request {
        /// The id to answer with (number or string).
        id: Value,
        /// The method.
        method: String,
        /// The params (`null` when absent).
        params: Value,
    },
    /// A call without a response.
    Notification {
        /// The method.
        method: String,
        /// The params (`null` when absent).
        params: Value,
    },
    /// The answer to one of our requests.
    Response {
        /// The id of our request.
        id: Value,
        /// The result or the error.
        outcome: Result<Value, RpcError>,
    },
}

/// A body that is not a usable message: the error to send back, with the request id when it
/// could be read (`null` otherwise), and whether to send anything at all (never for a broken
/// response, which has nobody to answer).
#[derive(Debug, Clone, PartialEq)]
pub struct Rejected {
    /// The id to answer with.
    pub id: Value,
    /// The error.
    pub error: RpcError,
}

/// Parses one frame body.
pub fn parse_incoming(body: &[u8]) -> Result<Incoming, Rejected> {
    let value: Value = serde_json::from_slice(body).map_err(|e| Rejected {
        id: Value::Null,
        error: RpcError::parse(format!("invalid JSON: {e}")),
    })?;
    let reject = |id: Value, message: String| Rejected {
        id,
        error: RpcError::invalid_request(message),
    };
    let obj = match value {
        Value::Object(obj) => obj,
        Value::Array(items) => {
            return Err(reject(
                Value::Null,
                format!(
                    "batch requests are not supported (got a batch of {}); send one JSON-RPC message per frame",
                    items.len()
                ),
            ));
        }
        other => {
            return Err(reject(
                Value::Null,
                format!(
                    "a JSON-RPC message must be an object, got {}",
                    kind_of(&other)
                ),
            ));
        }
    };
    let id = obj.get("id").cloned();
    let id_for_errors = match &id {
        Some(v @ (Value::Number(_) | Value::String(_))) => v.clone(),
        _ => Value::Null,
    };
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(reject(
            id_for_errors,
            "missing or wrong \"jsonrpc\": expected \"2.0\"".into(),
        ));
    }
    if let Some(id) = &id
        && !matches!(id, Value::Number(_) | Value::String(_))
    {
        return Err(reject(
            Value::Null,
            format!("\"id\" must be a number or a string, got {}", kind_of(id)),
        ));
    }
    match obj.get("method") {
        Some(Value::String(method)) => {
            let params = obj.get("params").cloned().unwrap_or(Value::Null);
            if !matches!(params, Value::Object(_) | Value::Array(_) | Value::Null) {
                return Err(Rejected {
                    id: id_for_errors,
                    error: RpcError::invalid_params(format!(
                        "\"params\" must be an object, got {}",
                        kind_of(&params)
                    )),
                });
            }
            Ok(match id {
                Some(id) => Incoming::Request {
                    id,
                    method: method.clone(),
                    params,
                },
                None => Incoming::Notification {
                    method: method.clone(),
                    params,
                },
            })
        }
        Some(other) => Err(reject(
            id_for_errors,
            format!("\"method\" must be a string, got {}", kind_of(other)),
        )),
        None => match (id, obj.get("result"), obj.get("error")) {
            (Some(id), Some(result), None) => Ok(Incoming::Response {
                id,
                outcome: Ok(result.clone()),
            }),
            (Some(id), None, Some(error)) if error.is_object() => Ok(Incoming::Response {
                id,
                outcome: Err(RpcError::from_value(error)),
            }),
            _ => Err(reject(
                id_for_errors,
                "not a request (no \"method\") and not a response (needs \"id\" and exactly one of \"result\" or \"error\")".into(),
            )),
        },
    }
}

/// Serializes a success response.
pub fn response(id: &Value, result: &Value) -> Vec<u8> {
    to_bytes(&json!({"jsonrpc": "2.0", "id": id, "result": result}))
}

/// Serializes an error response.
pub fn error_response(id: &Value, error: &RpcError) -> Vec<u8> {
    to_bytes(&json!({"jsonrpc": "2.0", "id": id, "error": error.to_value()}))
}

/// Serializes a notification.
pub fn notification(method: &str, params: &Value) -> Vec<u8> {
    to_bytes(&json!({"jsonrpc": "2.0", "method": method, "params": params}))
}

/// Serializes a request we send.
pub fn request(id: u64, method: &str, params: &Value) -> Vec<u8> {
    to_bytes(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
}

fn to_bytes(value: &Value) -> Vec<u8> {
    // Serializing a Value cannot fail (string keys only).
    serde_json::to_vec(value).unwrap_or_default()
}

/// "an array", "a number", ... for error messages.
pub fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_notifications_and_responses() {
        let r = parse_incoming(br#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{}}"#);
        assert!(matches!(r, Ok(Incoming::Request { ref method, .. }) if method == "ping"));
        let n = parse_incoming(br#"{"jsonrpc":"2.0","method":"x"}"#);
        assert!(matches!(
            n,
            Ok(Incoming::Notification {
                params: Value::Null,
                ..
            })
        ));
        let ok = parse_incoming(br#"{"jsonrpc":"2.0","id":"a","result":null}"#);
        assert!(matches!(
            ok,
            Ok(Incoming::Response {
                outcome: Ok(Value::Null),
                ..
            })
        ));
        let err =
            parse_incoming(br#"{"jsonrpc":"2.0","id":3,"error":{"code":-32000,"message":"no"}}"#);
        assert!(
            matches!(err, Ok(Incoming::Response { outcome: Err(ref e), .. }) if e.code == -32000 && e.message == "no")
        );
    }

    #[test]
    fn bad_messages_get_the_right_codes() {
        let code = |body: &[u8]| parse_incoming(body).unwrap_err().error.code;
        assert_eq!(code(b"{nope"), codes::PARSE_ERROR);
        assert_eq!(code(b"[]"), codes::INVALID_REQUEST);
        assert_eq!(
            code(br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#),
            codes::INVALID_REQUEST
        );
        assert_eq!(code(br#"{"id":1,"method":"ping"}"#), codes::INVALID_REQUEST);
        assert_eq!(
            code(br#"{"jsonrpc":"2.0","id":1,"method":5}"#),
            codes::INVALID_REQUEST
        );
        assert_eq!(
            code(br#"{"jsonrpc":"2.0","id":1,"method":"ping","params":5}"#),
            codes::INVALID_PARAMS
        );
        assert_eq!(
            code(br#"{"jsonrpc":"2.0","id":[1],"method":"ping"}"#),
            codes::INVALID_REQUEST
        );
        let rejected = parse_incoming(br#"{"id":7,"method":"ping"}"#).unwrap_err();
        assert_eq!(rejected.id, json!(7));
    }
}
