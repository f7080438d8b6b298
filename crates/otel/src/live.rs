//! The live path: a running session's events into the same spans an export of its journal
//! gives, handed to a bounded queue that a sender (the cli's, which posts them) drains.
//!
//! [`LiveSession`] maps what the journal holds, the persisted events, with the same
//! [`Mapper`] as the export, so the spans, their ids and their times are the export's. Two
//! notices the journal does not keep are added: `session.idle` of the main agent ends the
//! interaction (the export ends it at the next prompt, at the same time: its last event), and
//! `assistant.usage` puts the input and cache token counts on the model call (its output
//! count and finish are the answer's, already on the span). Mapping is a
//! few microseconds an event and never waits: a full [`SpanQueue`] drops its oldest span and
//! counts it, so a slow or absent receiver never slows the session.

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::trace::v1::Span;
use turnstile_journal::Event;

use crate::{MAX_SPANS_PER_REQUEST, MapOptions, Mapper};

/// The default number of finished spans waiting to be sent at most (the OpenTelemetry SDKs'
/// `OTEL_BSP_MAX_QUEUE_SIZE` default, the variable that sets it).
pub const DEFAULT_QUEUE_SPANS: usize = 2048;

/// One session's live mapping.
pub struct LiveSession {
    mapper: Mapper,
    out: Vec<Span>,
    queue: std::sync::Arc<SpanQueue>,
}

impl LiveSession {
    /// A mapping of the session `session` (its id; a resumed session's stream has no
    /// `session.start` to name it) into `queue`.
    pub fn new(session: &str, options: MapOptions, queue: std::sync::Arc<SpanQueue>) -> Self {
        LiveSession {
            mapper: Mapper::new(session, options).usage_beside_messages(),
            out: Vec::new(),
            queue,
        }
    }

    /// The endpoint in effect (its `session.info` message), for a resumed session whose stream
    /// starts after the journal's entry naming it.
    pub fn endpoint_in_effect(&mut self, message: &str) {
        self.mapper.endpoint_in_effect(message);
    }

    /// Maps one event the session emitted; the spans it ends are queued, and the end of an
    /// interaction asks for them to be sent now rather than at the next scheduled send.
    pub fn observe(&mut self, event: &Event) {
        let kind = event.event_type.as_str();
        let idle = kind == "session.idle" && event.agent_id.is_none();
        if event.is_live_only() && !idle && kind != "assistant.usage" {
            return;
        }
        self.mapper.push_event(event, &mut self.out);
        let ended_interaction = self.out.iter().any(|s| s.parent_span_id.is_empty());
        self.queue.push_all(self.out.drain(..));
        if idle || ended_interaction {
            self.queue.flush_soon();
        }
    }

    /// The session's stream ended (the session closed): what is still open ends as an export
    /// of its journal ends it, and the spans are sent now.
    pub fn finish(mut self) {
        self.mapper.finish(&mut self.out);
        self.queue.push_all(self.out.drain(..));
        self.queue.flush_soon();
    }

    /// Spans the mapping could not make ([`crate::MAX_OPEN_SPANS`] open at once).
    pub fn dropped(&self) -> u64 {
        self.mapper.counts().dropped
    }
}

/// Finished spans waiting for the sender: at most `capacity`, the oldest dropped (and
/// counted) when a new one comes to a full queue. Pushing never waits for the sender.
pub struct SpanQueue {
    state: Mutex<QueueState>,
    ready: Condvar,
    capacity: usize,
}

#[derive(Default)]
struct QueueState {
    spans: VecDeque<Span>,
    /// Spans dropped since the sender last took a batch.
    dropped: u64,
    flush: bool,
    closed: bool,
}

/// What the sender took from the queue.
#[derive(Debug, Default)]
pub struct Taken {
    /// At most [`MAX_SPANS_PER_REQUEST`] spans, oldest first.
    pub spans: Vec<Span>,
    /// Spans dropped since the last take, the queue being full.
    pub dropped: u64,
    /// The queue is closed and these are its last spans.
    pub last: bool,
}

impl SpanQueue {
    /// A queue of at most `capacity` spans (1 at least).
    pub fn new(capacity: usize) -> Self {
        SpanQueue {
            state: Mutex::default(),
            ready: Condvar::new(),
            capacity: capacity.max(1),
        }
    }

    fn lock(&self) -> MutexGuard<'_, QueueState> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Queues `spans`, dropping the oldest ones beyond the capacity.
    pub fn push_all(&self, spans: impl IntoIterator<Item = Span>) {
        let mut state = self.lock();
        let mut any = false;
        for span in spans {
            if state.spans.len() >= self.capacity {
                state.spans.pop_front();
                state.dropped += 1;
            }
            state.spans.push_back(span);
            any = true;
        }
        if any && state.spans.len() >= MAX_SPANS_PER_REQUEST {
            self.ready.notify_all();
        }
    }

    /// Asks the sender to send what is queued without waiting for its schedule.
    pub fn flush_soon(&self) {
        self.lock().flush = true;
        self.ready.notify_all();
    }

    /// No more spans will come: the sender sends what is left and stops.
    pub fn close(&self) {
        self.lock().closed = true;
        self.ready.notify_all();
    }

    /// Waits until a full request's worth is queued, a flush is asked for, the queue is
    /// closed, or `delay` passed, and takes up to a request's worth.
    pub fn take(&self, delay: Duration) -> Taken {
        let until = Instant::now() + delay;
        let mut state = self.lock();
        loop {
            if state.closed || state.flush || state.spans.len() >= MAX_SPANS_PER_REQUEST {
                break;
            }
            let now = Instant::now();
            if now >= until {
                break;
            }
            state = self
                .ready
                .wait_timeout(state, until - now)
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .0;
        }
        let n = state.spans.len().min(MAX_SPANS_PER_REQUEST);
        let spans: Vec<Span> = state.spans.drain(..n).collect();
        // A flush is done once everything queued when it was asked for has been taken.
        if state.spans.is_empty() {
            state.flush = false;
        }
        Taken {
            spans,
            dropped: std::mem::take(&mut state.dropped),
            last: state.closed && state.spans.is_empty(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Batcher, attrs};
    use prost::Message;
    use std::sync::Arc;
    use turnstile_journal::{JournalReader, ReadMode};

    fn fixture_events(path: &str) -> Vec<Event> {
        let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures")
            .join(path);
        JournalReader::open(&path, ReadMode::Strict)
            .unwrap()
            .map(|r| r.unwrap().event)
            .collect()
    }

    /// A live-only notice of `kind` with `data`, at `timestamp`.
    fn notice(kind: &str, data: &str, timestamp: &str, n: usize) -> Event {
        let line = format!(
            r#"{{"type":"{kind}","data":{data},"id":"00000000-0000-4000-8000-{n:012}","timestamp":{timestamp},"parentId":null,"ephemeral":true}}"#
        );
        Event::from_line(line.as_bytes()).unwrap()
    }

    #[test]
    fn a_live_stream_maps_to_the_spans_of_its_journal_with_the_input_counts_added() {
        let journal = fixture_events("multi-turn/events.jsonl");
        // The journal exported.
        let mut batcher = Batcher::new("t", "t");
        let mut requests = Vec::new();
        let records = JournalReader::open(
            std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("../../fixtures/multi-turn/events.jsonl"),
            ReadMode::Strict,
        )
        .unwrap();
        crate::export(records, "x", MapOptions::default(), &mut batcher, |r| {
            requests.push(r);
            Ok::<_, ()>(())
        })
        .unwrap();
        let mut exported = Vec::new();
        for request in requests {
            let decoded = crate::proto::collector::trace::v1::ExportTraceServiceRequest::decode(
                request.as_slice(),
            )
            .unwrap();
            for resource in decoded.resource_spans {
                for scope in resource.scope_spans {
                    exported.extend(scope.spans);
                }
            }
        }

        // The same events as a running session emits them: a usage notice after each answer,
        // an idle notice (and a delta) after each interaction's last turn, when the next
        // system prompt or the shutdown is about to be recorded.
        let queue = Arc::new(SpanQueue::new(DEFAULT_QUEUE_SPANS));
        let mut live = LiveSession::new("x", MapOptions::default(), Arc::clone(&queue));
        let mut n = 0;
        let mut after_turn = false;
        for event in &journal {
            let kind = event.event_type.as_str().to_owned();
            let at = serde_json::to_string(&event.timestamp).unwrap();
            if after_turn && matches!(kind.as_str(), "system.message" | "session.shutdown") {
                n += 1;
                live.observe(&notice(
                    "assistant.message_delta",
                    r#"{"messageId":"m","deltaContent":"x"}"#,
                    &at,
                    n,
                ));
                n += 1;
                live.observe(&notice("session.idle", "{}", &at, n));
                // The interaction's end asks for its spans to go now.
                let taken = queue.take(Duration::from_secs(3600));
                assert!(taken.spans.iter().any(|s| s.parent_span_id.is_empty()));
                // Back in the queue, for the comparison below.
                queue.push_all(taken.spans);
            }
            live.observe(event);
            after_turn = kind == "assistant.turn_end";
            if kind == "assistant.message" {
                n += 1;
                live.observe(&notice(
                    "assistant.usage",
                    r#"{"model":"gpt-4.1","inputTokens":100,"outputTokens":99}"#,
                    &at,
                    n,
                ));
            }
        }
        live.finish();
        queue.close();
        let mut sent = Vec::new();
        loop {
            let taken = queue.take(Duration::ZERO);
            sent.extend(taken.spans);
            if taken.last {
                break;
            }
        }
        assert_eq!(sent.len(), exported.len());
        for span in &sent {
            let twin = exported
                .iter()
                .find(|e| e.span_id == span.span_id)
                .unwrap_or_else(|| panic!("{} was not exported", span.name));
            let mut without = span.clone();
            without
                .attributes
                .retain(|a| a.key != "gen_ai.usage.input_tokens");
            assert_eq!(&without, twin);
            if span.name.starts_with("chat") {
                assert_eq!(
                    attrs::get_int(&span.attributes, "gen_ai.usage.input_tokens"),
                    Some(100)
                );
                // The answer's output count, not the notice's.
                assert_eq!(
                    attrs::get_int(&span.attributes, "gen_ai.usage.output_tokens"),
                    attrs::get_int(&twin.attributes, "gen_ai.usage.output_tokens")
                );
            }
        }
    }

    fn span(n: u8) -> Span {
        Span {
            span_id: vec![n; 8],
            ..Span::default()
        }
    }

    #[test]
    fn a_full_queue_drops_its_oldest_spans_and_counts_them() {
        let queue = SpanQueue::new(3);
        queue.push_all((1..=5).map(span));
        queue.close();
        let taken = queue.take(Duration::ZERO);
        let ids: Vec<u8> = taken.spans.iter().map(|s| s.span_id[0]).collect();
        assert_eq!(ids, vec![3, 4, 5]);
        assert_eq!(taken.dropped, 2);
        assert!(taken.last);
    }

    #[test]
    fn a_take_hands_out_one_request_at_a_time_and_a_flush_ends_the_wait() {
        let queue = SpanQueue::new(4 * MAX_SPANS_PER_REQUEST);
        queue.push_all((0..MAX_SPANS_PER_REQUEST + 1).map(|_| span(1)));
        // A full request's worth is ready without waiting.
        let first = queue.take(Duration::from_secs(3600));
        assert_eq!(first.spans.len(), MAX_SPANS_PER_REQUEST);
        assert!(!first.last);
        // The one left waits for a flush (asked from another thread), not for the hour.
        let queue = std::sync::Arc::new(queue);
        let flusher = std::sync::Arc::clone(&queue);
        let asked = std::thread::spawn(move || flusher.flush_soon());
        asked.join().unwrap();
        let second = queue.take(Duration::from_secs(3600));
        assert_eq!(second.spans.len(), 1);
    }
}
