//! `turnstile export --otlp [URL]`: a session's journal as OpenTelemetry GenAI traces, posted
//! to an OTLP/HTTP receiver as protobuf (`turnstile-otel` maps; this file reads and sends).
//!
//! The journal is read once, front to back, and spans go out in requests of at most
//! `MAX_SPANS_PER_REQUEST` spans as they end, so memory follows one request and the spans open
//! at once, never the journal. Each request waits for its answer (no second request in flight)
//! under the timeout (`OTEL_EXPORTER_OTLP_TIMEOUT`, 10 s by default); a receiver that refuses
//! (any status but 2xx), stalls or cannot be reached ends the export with an error naming it,
//! and the spans already accepted stay where they are (a second export sends the same ids).

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use turnstile_journal::{JournalReader, ReadMode};
use turnstile_otel::{Batcher, ExportConfig, MapOptions};

use crate::store::StoreArgs;

/// The most bytes of a refusing receiver's answer quoted in the error.
const MAX_ANSWER_QUOTED: usize = 1024;

/// Runs `turnstile export --otlp` on `session` of the store `from` (else `--store`, else the
/// state directory): `url` is the flag's value ("" when it was given bare).
pub fn run(
    session: &str,
    from: Option<&str>,
    url: &str,
    store: &StoreArgs,
    state_dir: Option<&Path>,
) -> Result<ExitCode> {
    let config = ExportConfig::resolve(Some(url), |name| std::env::var(name).ok())?;
    let from = from.or(store.store.as_deref());
    if let Some(nats) = from
        && turnstile_store_nats::is_nats_url(nats)
    {
        let nats = store.nats_config(nats)?;
        return crate::store::with_copy(nats, session, |path| {
            send(Path::new(path), session, &config)
        });
    }
    let paths = crate::target::resolve(session, from.map(Path::new).or(state_dir))?;
    paths.check_events_file()?;
    let name = paths
        .id
        .map(|id| id.to_string())
        .unwrap_or_else(|| session.to_owned());
    send(&paths.events, &name, &config)
}

/// Maps the journal at `path` and posts its requests; `name` stands for the session's id when
/// the journal has no `session.start`.
fn send(path: &Path, name: &str, config: &ExportConfig) -> Result<ExitCode> {
    let reader = JournalReader::open(path, ReadMode::Lenient)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let client = reqwest::Client::builder()
        .timeout(config.timeout)
        .connect_timeout(config.timeout)
        .build()
        .context("cannot build the HTTP client")?;
    let headers = headers(config)?;
    let mut batcher = Batcher::new(&config.service_name, env!("CARGO_PKG_VERSION"));
    let options = MapOptions {
        capture_content: config.capture_content,
    };
    let mut requests = 0u64;
    let mut rejected = 0i64;
    let counts = turnstile_otel::export(reader, name, options, &mut batcher, |body| {
        requests += 1;
        rejected += runtime.block_on(post(&client, config, &headers, body))?;
        anyhow::Ok(())
    })
    .with_context(|| {
        format!(
            "the export of {} stopped after {} accepted requests",
            path.display(),
            requests.saturating_sub(1)
        )
    })?;
    println!(
        "{} spans in {} requests to {}{}",
        counts.spans,
        requests,
        config.endpoint,
        if config.capture_content {
            " (with message contents)"
        } else {
            ""
        }
    );
    if counts.unfinished > 0 {
        eprintln!(
            "note: {} spans never ended in the journal (a crash, or a session still running): exported ending at the journal's last time, marked turnstile.span.unfinished",
            counts.unfinished
        );
    }
    if counts.torn_tail {
        eprintln!(
            "note: the journal ends in a torn line (a writer cut off mid-line); it was left out"
        );
    }
    if counts.unreadable > 0 {
        eprintln!(
            "warning: {} unreadable lines were skipped",
            counts.unreadable
        );
    }
    if counts.dropped > 0 {
        eprintln!(
            "warning: {} spans were not exported: more than {} were open at once",
            counts.dropped,
            turnstile_otel::MAX_OPEN_SPANS
        );
    }
    if rejected > 0 {
        eprintln!("warning: the receiver rejected {rejected} spans (OTLP partial success)");
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

/// The request headers of `config` (`OTEL_EXPORTER_OTLP_HEADERS`), checked.
pub(crate) fn headers(config: &ExportConfig) -> Result<reqwest::header::HeaderMap> {
    let mut headers = reqwest::header::HeaderMap::new();
    for (key, value) in &config.headers {
        let key = reqwest::header::HeaderName::from_bytes(key.as_bytes()).with_context(|| {
            format!("`{key}` is not an HTTP header name (OTEL_EXPORTER_OTLP_HEADERS)")
        })?;
        let value = reqwest::header::HeaderValue::from_str(value).with_context(|| {
            format!("the value of header `{key}` is not a valid HTTP header value")
        })?;
        headers.insert(key, value);
    }
    Ok(headers)
}

/// Posts one request; the spans the receiver says it rejected (partial success).
pub(crate) async fn post(
    client: &reqwest::Client,
    config: &ExportConfig,
    headers: &reqwest::header::HeaderMap,
    body: Vec<u8>,
) -> Result<i64> {
    let endpoint = &config.endpoint;
    let sent = client
        .post(endpoint)
        .headers(headers.clone())
        .header(reqwest::header::CONTENT_TYPE, "application/x-protobuf")
        .body(body)
        .send()
        .await;
    let mut response = sent.map_err(|e| failed(e, config, "send to"))?;
    let status = response.status();
    let mut answer = Vec::new();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                let room = (MAX_ANSWER_QUOTED * 64).saturating_sub(answer.len());
                answer.extend_from_slice(&chunk[..chunk.len().min(room)]);
            }
            Ok(None) => break,
            Err(e) => return Err(failed(e, config, "read the answer of")),
        }
    }
    if !status.is_success() {
        let quoted = String::from_utf8_lossy(&answer[..answer.len().min(MAX_ANSWER_QUOTED)]);
        bail!(
            "the OTLP receiver at {endpoint} refused the spans: HTTP {status}{}",
            if quoted.trim().is_empty() {
                String::new()
            } else {
                format!(": {}", quoted.trim())
            }
        );
    }
    Ok(
        turnstile_otel::rejected_spans(&answer).map_or(0, |(n, message)| {
            if !message.is_empty() {
                eprintln!("warning: the receiver says: {message}");
            }
            n
        }),
    )
}

/// A failed request as the user needs it: a timeout names the limit and its variable; any
/// other failure what was being done, to which receiver, and why.
fn failed(e: reqwest::Error, config: &ExportConfig, doing: &str) -> anyhow::Error {
    let endpoint = &config.endpoint;
    if e.is_timeout() {
        anyhow::anyhow!(
            "the OTLP receiver at {endpoint} did not answer within {:?} (OTEL_EXPORTER_OTLP_TIMEOUT sets the limit, in milliseconds)",
            config.timeout
        )
    } else {
        anyhow::Error::new(e).context(format!("cannot {doing} the OTLP receiver at {endpoint}"))
    }
}
