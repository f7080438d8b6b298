//! Retries: a call is sent again after a failure before any output (a refused connection, a
//! retryable status), announced as [`ModelEvent::Retry`], and never once a success status has
//! come back, so no answer is ever read twice.

use std::time::Instant;

use tokio::sync::mpsc::UnboundedSender;

use super::transport::{HttpCore, Response};
use crate::{CallOrigin, ModelError, ModelEvent};

impl HttpCore {
    /// POSTs `body` to `url` until a success status, retrying failures before any output
    /// (announced as [`ModelEvent::Retry`]); returns the response and when its attempt began.
    /// `extra` headers (the provider's own, then the call's) go after the credential; `origin`
    /// made the call.
    pub(crate) async fn post(
        &self,
        url: &str,
        body: &[u8],
        stream: bool,
        extra: &[(String, String)],
        origin: &CallOrigin,
        events: &UnboundedSender<ModelEvent>,
    ) -> Result<(Response, Instant), ModelError> {
        // Once per call (a key command runs once, retries reuse its key).
        let headers = self.headers(stream, extra).await?;
        let mut attempt = 0u32;
        loop {
            let started = Instant::now();
            let (error, retry_after) = match self.send(url, &headers, body, origin).await {
                // Committed: from here on nothing is ever sent again.
                Ok(response) if response.is_success() => return Ok((response, started)),
                Ok(response) => self.http_error(response).await,
                Err(error) => (error, None),
            };
            if !error.retryable || attempt >= self.config.retry.max_retries {
                return Err(error);
            }
            attempt += 1;
            self.wait_to_retry(attempt, retry_after, &error, events)
                .await;
        }
    }

    /// Announces retry `attempt` of a call that failed with `error` before any output
    /// ([`ModelEvent::Retry`]) and waits its delay (`retry_after` when the server named one).
    pub(crate) async fn wait_to_retry(
        &self,
        attempt: u32,
        retry_after: Option<std::time::Duration>,
        error: &ModelError,
        events: &UnboundedSender<ModelEvent>,
    ) {
        let delay = self.config.retry.delay(attempt, retry_after);
        let _ = events.send(ModelEvent::Retry {
            attempt,
            delay_ms: delay.as_millis() as u64,
            reason: error.to_string(),
            status_code: error.status_code,
        });
        tokio::time::sleep(delay).await;
    }
}
