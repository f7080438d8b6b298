//! The one HTTP provider: [`HttpProvider`] is generic over its [`Wire`] (the request body and
//! the reading of the answer, which is all that differs between Chat Completions, the
//! Responses API and Anthropic's Messages API), and does the rest the same way for every
//! wire: the model of a call, its URL, sending with retries, driving an SSE stream, reading a
//! whole body, remembering reasoning to send back, and cancellation.
//!
//! Reasoning: an answer may carry opaque reasoning (the Responses API's reasoning items,
//! Anthropic's thinking blocks) that the API wants back in front of the calls it led to; the
//! provider keeps it in a [`ReasoningMemory`] and hands it to the wire's body of later calls.
//! A wire without such reasoning never gives any, and the memory stays empty.

use std::marker::PhantomData;
use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

use serde::Serialize;
use serde_json::Value;
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use super::budget::check_tool_calls;
use super::config::{OpenAiConfig, ResponseLimits};
use super::errors::sse_error;
use super::transport::{HttpCore, Response};
use crate::reasoning::ReasoningMemory;
use crate::sse::SseParser;
use crate::{
    BoxFuture, ChatRequest, ModelError, ModelErrorKind, ModelEvent, ModelProvider, ModelResponse,
    cancellable,
};

/// An answer of the engine and the reasoning that came with it (to send back in front of the
/// answer's calls; empty for none).
pub(crate) type Answered = (ModelResponse, Vec<Value>);

/// What differs between the HTTP APIs: where a call goes, its body, and how its answer reads.
pub trait Wire: Send + Sync + 'static {
    /// The provider's short name ([`ModelProvider::name`]).
    const NAME: &'static str;
    /// The API path as `assistant.usage` names it ([`ModelProvider::api_endpoint`]).
    const API_ENDPOINT: Option<&'static str> = None;

    /// The URL a call for `model` is POSTed to.
    fn url(config: &OpenAiConfig, model: &str) -> String;

    /// The body of `request` sent to `model`, with the reasoning earlier answers left to
    /// send back.
    fn body<'a>(
        config: &'a OpenAiConfig,
        request: &'a ChatRequest,
        model: &'a str,
        reasoning: &'a ReasoningMemory,
    ) -> impl Serialize;

    /// An empty assembly of a streamed answer within `limits` (its bytes and its tool calls,
    /// counted by an `AnswerBudget`).
    fn stream(limits: &ResponseLimits) -> impl Assembly + Send;

    /// The answer in a whole (non-streamed) body.
    fn whole(
        body: &[u8],
        model: String,
        started: Instant,
        max_answer: usize,
    ) -> Result<Answered, ModelError>;
}

/// A streamed answer being assembled from the data of its SSE events.
pub trait Assembly {
    /// Handles one event's data (sending deltas as they come); `true` once the answer is
    /// complete.
    fn on_event(
        &mut self,
        data: &str,
        events: &UnboundedSender<ModelEvent>,
    ) -> Result<bool, ModelError>;

    /// How far the answer got (its budget's progress): moves with answer text, tool call
    /// bytes, new calls and the finish, never with empty deltas, keep-alives or metadata.
    /// Only its growth resets the idle timeout.
    fn progress(&self) -> usize;

    /// The answer: after [`Assembly::on_event`] said complete (`complete`), or when the body
    /// ended first, which is an error unless what came is a whole answer. `model` is the one
    /// asked for, `started` when the request went out.
    fn answer(
        self,
        complete: bool,
        model: String,
        started: Instant,
    ) -> Result<Answered, ModelError>;
}

/// A [`ModelProvider`] over HTTP(S) speaking the wire `W`.
#[derive(Debug)]
pub struct HttpProvider<W> {
    pub(crate) core: HttpCore,
    endpoint: String,
    reasoning: Mutex<ReasoningMemory>,
    wire: PhantomData<fn() -> W>,
}

impl<W: Wire> HttpProvider<W> {
    /// A provider for this configuration; fails only when the HTTP client cannot be built.
    pub fn new(config: OpenAiConfig) -> Result<Self, ModelError> {
        let endpoint = W::url(&config, &config.model);
        Ok(HttpProvider {
            core: HttpCore::new(config, &endpoint)?,
            endpoint,
            reasoning: Mutex::new(ReasoningMemory::default()),
            wire: PhantomData,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &OpenAiConfig {
        &self.core.config
    }

    /// The URL requests for the configured model are POSTed to.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The JSON body of a request, in the wire's shape.
    pub fn request_body(&self, request: &ChatRequest) -> Value {
        let reasoning = self.lock();
        let body = W::body(
            &self.core.config,
            request,
            self.model_of(request),
            &reasoning,
        );
        serde_json::to_value(body).expect("a request body serializes")
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, ReasoningMemory> {
        // The memory is only a cache: a panic elsewhere leaves it usable.
        self.reasoning.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn model_of<'a>(&'a self, request: &'a ChatRequest) -> &'a str {
        if request.model.is_empty() {
            &self.core.config.model
        } else {
            &request.model
        }
    }

    /// The call with its retries (cancellation is handled by the caller).
    async fn call(
        &self,
        request: &ChatRequest,
        events: &UnboundedSender<ModelEvent>,
    ) -> Result<ModelResponse, ModelError> {
        let model = self.model_of(request).to_string();
        let body = {
            let reasoning = self.lock();
            serde_json::to_vec(&W::body(&self.core.config, request, &model, &reasoning))
                .expect("a request body serializes")
        };
        let url = W::url(&self.core.config, &model);
        // A stream that made no progress at all before its idle timeout gave nothing to read
        // twice: it is sent again like a failure before output, within the overall deadline.
        let mut resent = 0u32;
        let (answer, reasoning) = loop {
            let (response, started) = self
                .core
                .post(
                    &url,
                    &body,
                    request.stream,
                    &request.headers,
                    &request.origin,
                    events,
                )
                .await?;
            if !request.stream {
                break self.read_whole(response, model, started).await?;
            }
            match self
                .read_stream(response, events, model.clone(), started)
                .await
            {
                Err(error) if error.retryable && resent < self.core.config.retry.max_retries => {
                    resent += 1;
                    self.core.wait_to_retry(resent, None, &error, events).await;
                }
                answered => break answered?,
            }
        };
        self.lock().remember_for(&answer, reasoning);
        Ok(answer)
    }

    /// Reads a whole (non-streamed) answer, within the answer and tool-call limits.
    async fn read_whole(
        &self,
        response: Response,
        model: String,
        started: Instant,
    ) -> Result<Answered, ModelError> {
        let body = self.core.read_whole_body(response).await?;
        let limits = &self.core.config.limits;
        let answered = W::whole(&body, model, started, limits.max_answer_bytes)?;
        check_tool_calls(answered.0.tool_calls.len(), limits.max_tool_calls)?;
        Ok(answered)
    }

    /// Reads a streamed answer to its end.
    async fn read_stream(
        &self,
        mut response: Response,
        events: &UnboundedSender<ModelEvent>,
        model: String,
        started: Instant,
    ) -> Result<Answered, ModelError> {
        let limits = self.core.config.limits;
        let mut parser = SseParser::new(limits.max_line_bytes);
        let mut assembly = W::stream(&limits);
        // The idle timeout counts from the last useful progress, not from the last byte: a
        // server sending empty deltas, comments or keep-alives makes none.
        let idle = self.core.config.timeouts.stall;
        let mut progressed = Instant::now();
        let mut progress = assembly.progress();
        loop {
            let bytes = match self
                .core
                .next_chunk_within(&mut response, idle, progressed)
                .await
            {
                Ok(Some(bytes)) => bytes,
                Ok(None) => break,
                // Nothing of the answer came (no text, call or finish): safe to send again.
                Err(mut error) => {
                    error.retryable = error.kind == ModelErrorKind::Timeout && progress == 0;
                    return Err(error);
                }
            };
            for data in parser.push(&bytes).map_err(sse_error)? {
                if assembly.on_event(&data, events)? {
                    return assembly.answer(true, model, started);
                }
            }
            if assembly.progress() != progress {
                progress = assembly.progress();
                progressed = Instant::now();
            }
        }
        for data in parser.finish().map_err(sse_error)? {
            if assembly.on_event(&data, events)? {
                return assembly.answer(true, model, started);
            }
        }
        assembly.answer(false, model, started)
    }
}

impl<W: Wire> ModelProvider for HttpProvider<W> {
    fn name(&self) -> &str {
        W::NAME
    }

    fn api_endpoint(&self) -> Option<&str> {
        W::API_ENDPOINT
    }

    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
        events: UnboundedSender<ModelEvent>,
        cancel: CancellationToken,
    ) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
        let deadline = self.core.config.timeouts.deadline;
        cancellable(cancel, async move {
            match tokio::time::timeout(deadline, self.call(request, &events)).await {
                Ok(answer) => answer,
                Err(_) => Err(ModelError::new(
                    ModelErrorKind::Timeout,
                    format!(
                        "the model call passed its deadline of {} s (--model-timeout) and was \
                         stopped there",
                        deadline.as_secs_f64()
                    ),
                )),
            }
        })
    }
}
