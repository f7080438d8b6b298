//! A scripted model server on 127.0.0.1 speaking OpenAI Chat Completions, the OpenAI Responses
//! API and Anthropic's Messages API.
//!
//! The stand-in for a remote model in tests, conformance runs and the demo: each model request
//! (`POST /v1/chat/completions`, `/v1/responses` or `/v1/messages`; see [`Wire`]) gets the next
//! response of a [`Script`] in the format of its path, streamed as that format's SSE events
//! when the request asks for `stream`, whole otherwise. Failures are scriptable too (status codes, delays, dropped connections,
//! hangs, malformed output, several choices, endless answers). Every request is recorded,
//! with its method, path and headers; `GET /models` serves the script's `models` entries. When the script runs out, the
//! server answers HTTP 500 with an error saying so.
//!
//! (`tests/server.rs`, `answers_whole_when_not_streaming`, starts a server the same way.)
//!
//! ```ignore
//! # async fn demo() -> std::io::Result<()> {
//! use turnstile_scripted_model::{Script, ScriptedServer};
//! let server = ScriptedServer::start(
//!     Script::new()
//!         .tool_call("glob", serde_json::json!({"pattern": "*.txt"}))
//!         .text("There are 3 text files."),
//! )
//! .await?;
//! println!("{}", server.url()); // http://127.0.0.1:PORT/v1
//! # Ok(()) }
//! ```

mod answer;
mod anthropic;
mod http;
mod responses;
mod script;
mod server;

pub use script::{
    DEFAULT_MODEL, Script, ScriptError, ScriptedChoice, ScriptedResponse, ScriptedToolCall, Wire,
};
pub use server::{RecordedRequest, ScriptedServer, ServerOptions};
