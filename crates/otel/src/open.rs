//! A span being built: its ids, times and attributes, until the event that ends it.

use opentelemetry_proto::tonic::trace::v1::{Span, Status, span::SpanKind, status::StatusCode};

use crate::attrs;
use crate::ids::{SpanId, TraceId};

/// Attribute set on a span the journal never ended (the session crashed or the journal was
/// cut): it is ended at the last time the journal shows and its status is an error.
pub const UNFINISHED: &str = "turnstile.span.unfinished";

/// An open span.
#[derive(Debug, Clone)]
pub struct OpenSpan {
    /// The span as far as known; `end_time_unix_nano` is set when it is handed out.
    pub span: Span,
    /// The time (ms since the epoch) of the last event that belongs to it.
    pub last_ms: i64,
}

impl OpenSpan {
    /// A span named `name` of `kind` opened at `ms`.
    pub fn new(
        trace: TraceId,
        id: SpanId,
        parent: Option<SpanId>,
        name: String,
        kind: SpanKind,
        ms: i64,
    ) -> Self {
        OpenSpan {
            span: Span {
                trace_id: trace.to_vec(),
                span_id: id.to_vec(),
                parent_span_id: parent.map(|p| p.to_vec()).unwrap_or_default(),
                name,
                kind: kind as i32,
                start_time_unix_nano: nanos(ms),
                ..Span::default()
            },
            last_ms: ms,
        }
    }

    /// The span's id.
    pub fn id(&self) -> SpanId {
        let mut id = [0; 8];
        id.copy_from_slice(&self.span.span_id);
        id
    }

    /// The span's trace.
    pub fn trace(&self) -> TraceId {
        let mut id = [0; 16];
        id.copy_from_slice(&self.span.trace_id);
        id
    }

    /// Something belonging to the span happened at `ms`.
    pub fn touch(&mut self, ms: i64) {
        self.last_ms = self.last_ms.max(ms);
    }

    /// Sets an attribute (replacing one of the same key).
    pub fn set(&mut self, value: opentelemetry_proto::tonic::common::v1::KeyValue) {
        attrs::set(&mut self.span.attributes, value);
    }

    /// Marks the span failed with `message` and, when given, `error.type`.
    pub fn fail(&mut self, error_type: Option<&str>, message: &str) {
        if let Some(kind) = error_type {
            self.set(attrs::string("error.type", kind));
        }
        self.span.status = Some(Status {
            code: StatusCode::Error as i32,
            message: attrs::clip(message),
        });
    }

    /// Whether the span was marked failed.
    pub fn failed(&self) -> bool {
        self.span
            .status
            .as_ref()
            .is_some_and(|s| s.code == StatusCode::Error as i32)
    }

    /// The finished span, ended at its last event.
    pub fn end(mut self) -> Span {
        self.span.end_time_unix_nano = nanos(self.last_ms).max(self.span.start_time_unix_nano);
        self.span
    }

    /// The span the journal never ended, ended at `ms` (the journal's last time) and marked.
    pub fn end_unfinished(mut self, ms: i64, why: &str) -> Span {
        self.touch(ms);
        self.set(attrs::boolean(UNFINISHED, true));
        if !self.failed() {
            self.fail(Some("unfinished"), why);
        }
        self.end()
    }
}

/// Milliseconds since the epoch as OTLP's nanoseconds (0 before the epoch).
pub fn nanos(ms: i64) -> u64 {
    u64::try_from(ms).unwrap_or(0).saturating_mul(1_000_000)
}
