//! Finished spans into OTLP export requests of bounded size.

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::InstrumentationScope;
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};
use prost::Message;

use crate::attrs;

/// Spans in one request at most (the OpenTelemetry SDKs' default batch size is 512).
pub const MAX_SPANS_PER_REQUEST: usize = 512;

/// Encoded bytes of one request at most, besides the last span added: a batch is sent once it
/// reaches this size. With [`attrs::MAX_TEXT_BYTES`] per text a span stays far below it.
pub const MAX_REQUEST_BYTES: usize = 4 * 1024 * 1024;

/// The semantic conventions' version the spans follow (the `schema_url` of their scope).
pub const SCHEMA_URL: &str = "https://opentelemetry.io/schemas/1.37.0";

/// Collects spans and hands out a request when it is full.
pub struct Batcher {
    resource: Resource,
    spans: Vec<Span>,
    bytes: usize,
}

impl Batcher {
    /// A batcher whose requests name `service` (`service.name`) and `version`.
    pub fn new(service: &str, version: &str) -> Self {
        Batcher {
            resource: Resource {
                attributes: vec![
                    attrs::string("service.name", service),
                    attrs::string("service.version", version),
                ],
                ..Resource::default()
            },
            spans: Vec::new(),
            bytes: 0,
        }
    }

    /// Adds a span; a full request (by count or bytes) is returned encoded.
    pub fn push(&mut self, span: Span) -> Option<Vec<u8>> {
        self.bytes += span.encoded_len();
        self.spans.push(span);
        if self.spans.len() >= MAX_SPANS_PER_REQUEST || self.bytes >= MAX_REQUEST_BYTES {
            return self.flush();
        }
        None
    }

    /// The spans held, as one encoded request; `None` when there are none.
    pub fn flush(&mut self) -> Option<Vec<u8>> {
        if self.spans.is_empty() {
            return None;
        }
        self.bytes = 0;
        let request = ExportTraceServiceRequest {
            resource_spans: vec![ResourceSpans {
                resource: Some(self.resource.clone()),
                scope_spans: vec![ScopeSpans {
                    scope: Some(InstrumentationScope {
                        name: "turnstile".to_owned(),
                        version: env!("CARGO_PKG_VERSION").to_owned(),
                        ..InstrumentationScope::default()
                    }),
                    spans: std::mem::take(&mut self.spans),
                    schema_url: SCHEMA_URL.to_owned(),
                }],
                schema_url: String::new(),
            }],
        };
        Some(request.encode_to_vec())
    }
}
