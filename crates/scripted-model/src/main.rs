//! `scripted-model --script FILE [--port N] [--record-requests FILE]`: serves a script on
//! 127.0.0.1 until interrupted; prints `listening on http://127.0.0.1:PORT/v1` first.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use turnstile_scripted_model::{Script, ScriptedServer, ServerOptions};

const USAGE: &str = "usage: scripted-model --script FILE [--port N] [--record-requests FILE]";

/// `--help`: enough to write a script without reading the source.
const HELP: &str = "\
A scripted OpenAI-compatible model server on 127.0.0.1, to try turnstile offline and to test it.

usage: scripted-model --script FILE [--port N] [--record-requests FILE]

  --script FILE            the answers to serve, in order (format below)
  --port N                 port to listen on [default: any free port]
  --record-requests FILE   append every request received, one JSON line each

Prints `listening on http://127.0.0.1:PORT/v1` (pass that as turnstile's --base-url), then serves
until Ctrl-C. Each POST .../chat/completions takes the next response; when the script runs out
the server answers HTTP 500, so restart it for another run.

Script format (JSON):
  {
    \"model\": \"scripted-model\",              model listed by GET /v1/models (optional)
    \"responses\": [                          one per model call, in order
      {\"content\": \"Let me look.\",
       \"toolCalls\": [{\"name\": \"glob\", \"arguments\": {\"pattern\": \"*.md\"}}]},
      {\"content\": \"Done: the answer.\"}        no toolCalls: the model's final answer
    ],
    \"summaries\": [{\"content\": \"<overview>...</overview>\"}]   answers to requests whose last
                                            message mentions \"summar\", cycled (optional)
  }
A response may also set: \"id\" on a tool call (default call_<n>), \"usage\" (OpenAI field names),
\"status\" and \"errorBody\" (an HTTP error), \"headers\", \"delayMs\", \"chunkDelayMs\",
\"forSystem\" (served only to requests whose system prompt starts with that text, e.g. a
sub-agent's, ahead of the others; the rest take the next response without it),
\"afterRequests\" (held until that many model requests have arrived, 60 s at most),
\"dropAfterChunks\", \"hang\", \"malformed\", \"finishReason\", \"moreChoices\", \"endless\".
Example: examples/offline-script.json in the turnstile repository.";

struct Args {
    script: PathBuf,
    options: ServerOptions,
}

fn parse_args() -> Result<Args, String> {
    let mut script = None;
    let mut options = ServerOptions::default();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n.to_string(), Some(v.to_string())),
            _ => (arg.clone(), None),
        };
        let mut value = |what: &str| {
            inline
                .clone()
                .or_else(|| args.next())
                .ok_or_else(|| format!("{what} needs a value"))
        };
        match name.as_str() {
            "--script" => script = Some(PathBuf::from(value("--script")?)),
            "--port" => {
                let v = value("--port")?;
                options.port = v.parse().map_err(|_| format!("bad --port: {v}"))?;
            }
            "--record-requests" => {
                options.record_requests = Some(PathBuf::from(value("--record-requests")?))
            }
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument: {other}")),
        }
    }
    Ok(Args {
        script: script.ok_or("--script is required")?,
        options,
    })
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(args) => args,
        Err(msg) if msg.is_empty() => {
            println!("{HELP}");
            return ExitCode::SUCCESS;
        }
        Err(msg) => {
            eprintln!("scripted-model: {msg}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let script = match Script::from_file(&args.script) {
        Ok(script) => script,
        Err(e) => {
            eprintln!("scripted-model: {e}");
            return ExitCode::from(2);
        }
    };
    let port = args.options.port;
    let server = match ScriptedServer::start_with(script, args.options).await {
        Ok(server) => server,
        Err(e) => {
            eprintln!(
                "scripted-model: cannot listen on 127.0.0.1:{}: {e} (another --port, or none for a free one)",
                port
            );
            return ExitCode::FAILURE;
        }
    };
    println!("listening on {}", server.url());
    let _ = std::io::stdout().flush();
    let _ = tokio::signal::ctrl_c().await;
    server.shutdown();
    ExitCode::SUCCESS
}
