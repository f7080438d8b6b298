//! `turnstile-otel`: a session's journal as OpenTelemetry traces that follow the GenAI
//! semantic conventions (`gen_ai.*`), encoded as OTLP protobuf with the official message
//! definitions (`opentelemetry-proto`, prost only).
//!
//! Any journal will do, the Copilot CLI's included: an `invoke_agent` span per interaction, a
//! `chat` span per model call, an `execute_tool` span per tool call, sub-agents as child
//! `invoke_agent` spans (`docs/otel.md` has the whole mapping). Trace and span ids derive from
//! the session and event ids ([`ids`]), so a second export of a session gives the same ids.
//! Memory follows the spans open at once and one request, never the journal: spans are handed
//! out as their ends are read and sent in batches ([`Batcher`]). The crate opens no file and
//! no socket: the caller reads the journal and posts the requests (`turnstile export --otlp`).
//! A running session's events take the same path live ([`live`]): the cli's sender posts
//! what [`LiveSession`] queues.
//!
//! (The unit test `tests::a_fixture_maps_to_requests` runs these lines.)
//!
//! ```ignore
//! let reader = turnstile_journal::JournalReader::open("events.jsonl", Default::default())?;
//! let counts = turnstile_otel::export(reader, "session", MapOptions::default(), &mut batcher,
//!     |request: Vec<u8>| post(request))?;
//! ```

pub mod attrs;
mod batch;
pub mod config;
pub mod ids;
pub mod live;
mod live_config;
mod mapper;
mod open;

pub use batch::{Batcher, MAX_REQUEST_BYTES, MAX_SPANS_PER_REQUEST, SCHEMA_URL};
pub use config::{ConfigError, ExportConfig};
pub use live::{LiveSession, SpanQueue};
pub use live_config::{DEFAULT_SCHEDULE_DELAY, LiveConfig};
pub use mapper::{Counts, MAX_OPEN_SPANS, MapOptions, Mapper};
pub use open::UNFINISHED;
/// The official OTLP messages, for readers of what this crate encodes.
pub use opentelemetry_proto::tonic as proto;

use turnstile_journal::{ReadError, Record};

/// Maps every record of `records` and hands each full request to `send`, the last partial one
/// included; stops at the first error `send` returns.
pub fn export<E>(
    records: impl IntoIterator<Item = Result<Record, ReadError>>,
    session: &str,
    options: MapOptions,
    batcher: &mut Batcher,
    mut send: impl FnMut(Vec<u8>) -> Result<(), E>,
) -> Result<Counts, E> {
    let mut mapper = Mapper::new(session, options);
    let mut spans = Vec::new();
    for record in records {
        mapper.push(record, &mut spans);
        for span in spans.drain(..) {
            if let Some(request) = batcher.push(span) {
                send(request)?;
            }
        }
    }
    mapper.finish(&mut spans);
    for span in spans.drain(..) {
        if let Some(request) = batcher.push(span) {
            send(request)?;
        }
    }
    if let Some(request) = batcher.flush() {
        send(request)?;
    }
    Ok(mapper.counts().clone())
}

/// The spans an OTLP receiver's answer says it rejected, with its message: `None` when the
/// answer is empty (all accepted) or not an `ExportTraceServiceResponse`.
pub fn rejected_spans(answer: &[u8]) -> Option<(i64, String)> {
    use prost::Message;
    let response = proto::collector::trace::v1::ExportTraceServiceResponse::decode(answer).ok()?;
    let partial = response.partial_success?;
    (partial.rejected_spans > 0 || !partial.error_message.is_empty())
        .then_some((partial.rejected_spans, attrs::clip(&partial.error_message)))
}

#[cfg(test)]
mod tests;
