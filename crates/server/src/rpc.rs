//! JSON-RPC 2.0 messages: parsing what a peer sends, building what we send, and the errors.

use serde::Deserialize;
use serde_json::value::RawValue;
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
    /// A method other than `connect` before the connection authenticated (the Copilot CLI's
    /// code: the same number as [`SESSION_NOT_FOUND`], told apart by the message).
    pub const AUTHENTICATION_REQUIRED: i64 = -32001;
    /// `connect` without the connection token or with another one (the Copilot CLI's code).
    pub const AUTHENTICATION_FAILED: i64 = -32002;
    /// `connect` with a token where none is asked for, on stdio (the Copilot CLI's code).
    pub const AUTHENTICATION_NOT_CONFIGURED: i64 = -32003;
    /// The session's journal or task failed.
    pub const SESSION_FAILED: i64 = -32004;
    /// The server had no room for a large frame in time (`--max-inflight-frame-bytes`).
    pub const SERVER_BUSY: i64 = -32005;
    /// A request after `runtime.shutdown` (the Copilot CLI's `SERVER_SHUTTING_DOWN`).
    pub const SERVER_SHUTTING_DOWN: i64 = -32000;
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

    /// -32601 for `method`, in the Copilot CLI's words, with why when it is known.
    pub fn method_not_found(method: &str, why: Option<&str>) -> Self {
        let message = match why {
            Some(why) => format!(
                "Unhandled method {method}: not supported by turnstile ({why}; see docs/protocol.md)"
            ),
            None => format!(
                "Unhandled method {method} (see docs/protocol.md for the supported methods)"
            ),
        };
        Self::new(codes::METHOD_NOT_FOUND, message)
    }

    /// -32601 worded exactly as the Copilot CLI words it for a method it does not serve
    /// either (`Unhandled method NAME`); turnstile's reason goes in `data`.
    pub fn unhandled(method: &str, why: &str) -> Self {
        let mut e = Self::new(
            codes::METHOD_NOT_FOUND,
            format!("Unhandled method {method}"),
        );
        e.data = Some(Box::new(serde_json::json!({ "reason": why })));
        e
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

/// A request id exactly as the peer wrote it (a number or a string), echoed back byte for
/// byte: an integer beyond 64 bits must not come back as a float.
#[derive(Debug, Clone)]
pub struct RequestId(Box<RawValue>);

impl RequestId {
    /// `null`, for errors about a message whose id could not be read.
    pub fn null() -> Self {
        // "null" is valid JSON: this cannot fail.
        RequestId(RawValue::from_string("null".into()).unwrap_or_else(|_| unreachable!()))
    }

    /// The id's JSON text.
    pub fn as_json(&self) -> &str {
        self.0.get()
    }

    /// The id as a JSON value (a number too large for 64 bits becomes a float here).
    pub fn to_value(&self) -> Value {
        serde_json::from_str(self.0.get()).unwrap_or(Value::Null)
    }

    fn is_number_or_string(&self) -> bool {
        matches!(
            self.0.get().as_bytes().first(),
            Some(b'"' | b'-' | b'0'..=b'9')
        )
    }
}

impl PartialEq for RequestId {
    fn eq(&self, other: &Self) -> bool {
        self.0.get() == other.0.get()
    }
}

/// A message received from the peer.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// A call that wants a response.
    Request {
        /// The id to answer with, as sent.
        id: RequestId,
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
/// could be read (`null` otherwise).
#[derive(Debug, Clone, PartialEq)]
pub struct Rejected {
    /// The id to answer with.
    pub id: RequestId,
    /// The error.
    pub error: RpcError,
}

/// The envelope of a message, read in one pass: the id stays raw text, the rest is parsed.
/// Absent and `null` members are told apart where JSON-RPC cares (`result: null` is a result).
#[derive(Deserialize)]
struct Envelope {
    jsonrpc: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    id: Option<Box<RawValue>>,
    method: Option<Value>,
    params: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    result: Option<Box<RawValue>>,
    error: Option<Value>,
}

/// `Some` for any member that is present, `null` included.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Box<RawValue>>, D::Error> {
    Box::<RawValue>::deserialize(d).map(Some)
}

/// Parses one frame body.
pub fn parse_incoming(body: &[u8]) -> Result<Incoming, Rejected> {
    let envelope: Envelope = match serde_json::from_slice(body) {
        Ok(envelope) => envelope,
        Err(e) => return Err(not_an_envelope(body, e)),
    };
    let reject = |id: RequestId, message: String| Rejected {
        id,
        error: RpcError::invalid_request(message),
    };
    let id = envelope.id.map(RequestId);
    let id_for_errors = match &id {
        Some(id) if id.is_number_or_string() => id.clone(),
        _ => RequestId::null(),
    };
    if envelope.jsonrpc.as_ref().and_then(Value::as_str) != Some("2.0") {
        return Err(reject(
            id_for_errors,
            "missing or wrong \"jsonrpc\": expected \"2.0\"".into(),
        ));
    }
    if let Some(id) = &id
        && !id.is_number_or_string()
    {
        return Err(reject(
            RequestId::null(),
            format!(
                "\"id\" must be a number or a string, got {}",
                kind_of(&id.to_value())
            ),
        ));
    }
    match envelope.method {
        Some(Value::String(method)) => {
            let params = envelope.params.unwrap_or(Value::Null);
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
                Some(id) => Incoming::Request { id, method, params },
                None => Incoming::Notification { method, params },
            })
        }
        Some(other) => Err(reject(
            id_for_errors,
            format!("\"method\" must be a string, got {}", kind_of(&other)),
        )),
        None => match (id, envelope.result, envelope.error) {
            (Some(id), Some(result), None) => Ok(Incoming::Response {
                id: id.to_value(),
                outcome: Ok(serde_json::from_str(result.get()).unwrap_or(Value::Null)),
            }),
            (Some(id), None, Some(error)) if error.is_object() => Ok(Incoming::Response {
                id: id.to_value(),
                outcome: Err(RpcError::from_value(&error)),
            }),
            _ => Err(reject(
                id_for_errors,
                "not a request (no \"method\") and not a response (needs \"id\" and exactly one of \"result\" or \"error\")".into(),
            )),
        },
    }
}

/// Why a body is not a message envelope: not JSON at all (`-32700`), or JSON that is not an
/// object (`-32600`).
fn not_an_envelope(body: &[u8], e: serde_json::Error) -> Rejected {
    let invalid = |message: String| Rejected {
        id: RequestId::null(),
        error: RpcError::invalid_request(message),
    };
    match serde_json::from_slice::<serde::de::IgnoredAny>(body) {
        Err(_) => Rejected {
            id: RequestId::null(),
            error: RpcError::parse(format!("invalid JSON: {e}")),
        },
        Ok(_) => match body.iter().find(|b| !b.is_ascii_whitespace()) {
            Some(b'[') => invalid(format!(
                "batch requests are not supported (got a batch of {}); send one JSON-RPC message per frame",
                serde_json::from_slice::<Vec<serde::de::IgnoredAny>>(body).map_or(0, |v| v.len())
            )),
            Some(b'{') => invalid(format!("not a JSON-RPC message: {e}")),
            _ => invalid(format!(
                "a JSON-RPC message must be an object, got {}",
                serde_json::from_slice::<Value>(body).map_or("a value", |v| kind_of(&v))
            )),
        },
    }
}

/// Serializes a success response.
pub fn response(id: &RequestId, result: &Value) -> Vec<u8> {
    let mut out = envelope_head(id);
    out.extend_from_slice(b",\"result\":");
    write_value(&mut out, result);
    out.push(b'}');
    out
}

/// Serializes an error response.
pub fn error_response(id: &RequestId, error: &RpcError) -> Vec<u8> {
    let mut out = envelope_head(id);
    out.extend_from_slice(b",\"error\":");
    write_value(&mut out, &error.to_value());
    out.push(b'}');
    out
}

fn envelope_head(id: &RequestId) -> Vec<u8> {
    let mut out = Vec::with_capacity(64);
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    out.extend_from_slice(id.as_json().as_bytes());
    out
}

fn write_value(out: &mut Vec<u8>, value: &Value) {
    // Serializing a Value into memory cannot fail (string keys only).
    let _ = serde_json::to_writer(out, value);
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
        assert_eq!(rejected.id.as_json(), "7");
        assert_eq!(code(b"7"), codes::INVALID_REQUEST);
        assert_eq!(
            code(br#"{"jsonrpc":"2.0","id":{},"method":"ping"}"#),
            codes::INVALID_REQUEST
        );
    }

    #[test]
    fn ids_are_echoed_exactly() {
        for id in [
            "123456789012345678901234567890",
            "-1.50",
            "\"a\\u0041\"",
            "18446744073709551616",
        ] {
            let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#);
            let Ok(Incoming::Request { id: got, .. }) = parse_incoming(body.as_bytes()) else {
                panic!("{body} is a request");
            };
            assert_eq!(got.as_json(), id);
            let answer = String::from_utf8(response(&got, &json!({"ok": true}))).unwrap();
            assert_eq!(
                answer,
                format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"ok":true}}}}"#)
            );
            let error = String::from_utf8(error_response(&got, &RpcError::internal("x"))).unwrap();
            assert!(error.starts_with(&format!(r#"{{"jsonrpc":"2.0","id":{id},"error":"#)));
        }
        // A result of null is a result.
        let ok = parse_incoming(br#"{"jsonrpc":"2.0","id":5,"result":null}"#);
        assert!(matches!(
            ok,
            Ok(Incoming::Response {
                outcome: Ok(Value::Null),
                ..
            })
        ));
    }
}
