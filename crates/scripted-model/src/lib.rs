//! A scripted OpenAI-compatible Chat Completions server on 127.0.0.1.
//!
//! The stand-in for a remote model in tests, conformance runs and the demo: each
//! `POST /v1/chat/completions` (or `/chat/completions`) gets the next response of a
//! [`Script`], streamed as SSE `chat.completion.chunk`s when the request asks for `stream`,
//! whole otherwise. Failures are scriptable too (status codes, delays, dropped connections,
//! hangs, malformed output, several choices, endless answers). Every request is recorded,
//! with its method, path and headers; `GET /models` serves the script's `models` entries. When the script runs out, the
//! server answers HTTP 500 with an error saying so.
//!
//! ```no_run
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

mod http;
mod script;
mod server;

pub use script::{
    DEFAULT_MODEL, Script, ScriptError, ScriptedChoice, ScriptedResponse, ScriptedToolCall,
};
pub use server::{RecordedRequest, ScriptedServer, ServerOptions};
