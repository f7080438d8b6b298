//! How to reach a model server: kind, wire format, URL, credential, model, timeouts, retries.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

/// How long to wait for a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// From sending the request to the response head (connecting included).
    pub request: Duration,
    /// Idle timeout: longest time without useful progress in a response body. In a stream
    /// only answer text, tool call bytes, a new tool call and the finish count as progress;
    /// empty deltas, SSE comments, keep-alives and usage events do not reset it.
    pub stall: Duration,
    /// Overall deadline of one model call: from the first attempt (key command and retries
    /// included) to the end of the answer.
    pub deadline: Duration,
}

impl Timeouts {
    /// Default idle timeout (`--model-idle-timeout`): 60 s.
    pub const DEFAULT_IDLE: Duration = Duration::from_secs(60);
    /// Default overall deadline of one call (`--model-timeout`): 20 minutes, room for a long
    /// answer from a slow local model.
    pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(20 * 60);
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            request: Duration::from_secs(120),
            stall: Self::DEFAULT_IDLE,
            deadline: Self::DEFAULT_DEADLINE,
        }
    }
}

/// When and how often a call is sent again after a failure before any output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt (0 disables retrying).
    pub max_retries: u32,
    /// Delay before the first retry; doubled for each further one, with jitter.
    pub base_delay: Duration,
    /// Longest computed delay.
    pub max_delay: Duration,
    /// Longest delay taken from a server's `Retry-After` (longer ones are cut to this).
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 3,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(8),
            max_retry_after: Duration::from_secs(30),
        }
    }
}

impl RetryPolicy {
    /// The delay before retry number `attempt` (1-based), honouring a server's `Retry-After`.
    pub(super) fn delay(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        if let Some(after) = retry_after {
            return after.min(self.max_retry_after);
        }
        let factor = 2u32.saturating_pow(attempt.saturating_sub(1));
        let full = self.base_delay.saturating_mul(factor).min(self.max_delay);
        // Jitter: somewhere between half and all of the computed delay.
        let half = full / 2;
        half + half.mul_f64(random_unit())
    }
}

/// How much of a server's answer is read before the call fails with
/// [`ModelErrorKind::TooLarge`](crate::ModelErrorKind::TooLarge): memory stays bounded
/// whatever the server sends, and no journal line gets larger than `max_answer_bytes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResponseLimits {
    /// Longest SSE line (and joined `data` of one event) of a streamed answer.
    pub max_line_bytes: usize,
    /// Largest answer: its text plus every tool call's arguments, streamed or not.
    pub max_answer_bytes: usize,
    /// Largest non-streamed response body (JSON included).
    pub max_body_bytes: usize,
    /// Most tool calls in one answer; each also counts [`TOOL_CALL_BYTES`] (plus its id and
    /// name) against `max_answer_bytes`, so calls with empty arguments are not free.
    ///
    /// [`TOOL_CALL_BYTES`]: ResponseLimits::TOOL_CALL_BYTES
    pub max_tool_calls: usize,
}

impl ResponseLimits {
    /// Default longest SSE line: 16 MiB.
    pub const DEFAULT_LINE_BYTES: usize = 16 * 1024 * 1024;
    /// Default largest answer: 32 MiB.
    pub const DEFAULT_ANSWER_BYTES: usize = 32 * 1024 * 1024;
    /// Default largest non-streamed body: 64 MiB.
    pub const DEFAULT_BODY_BYTES: usize = 64 * 1024 * 1024;
    /// Default most tool calls in one answer: 128.
    pub const DEFAULT_TOOL_CALLS: usize = 128;
    /// Bytes every tool call counts against `max_answer_bytes` beyond its id, name and
    /// arguments.
    pub const TOOL_CALL_BYTES: usize = 64;
}

impl Default for ResponseLimits {
    fn default() -> Self {
        ResponseLimits {
            max_line_bytes: Self::DEFAULT_LINE_BYTES,
            max_answer_bytes: Self::DEFAULT_ANSWER_BYTES,
            max_body_bytes: Self::DEFAULT_BODY_BYTES,
            max_tool_calls: Self::DEFAULT_TOOL_CALLS,
        }
    }
}

/// A number in `[0, 1)` from the std hasher's random keys (no extra dependency).
fn random_unit() -> f64 {
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u64(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0),
    );
    (hasher.finish() >> 11) as f64 / (1u64 << 53) as f64
}

/// Which kind of server (the SDK provider's `type`): it decides the URL, the credential's
/// header and what the request carries beyond each format's basics.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum ApiFlavor {
    /// Any OpenAI-compatible server: `POST {base_url}/chat/completions`, the key as
    /// `Authorization: Bearer`.
    #[default]
    OpenAi,
    /// The endpoint the Copilot SDK clients configure (`COPILOT_API_URL`, no `/v1`):
    /// `POST {base_url}/chat/completions` and `GET {base_url}/models` with the GitHub token as
    /// bearer and the Copilot CLI's identifying headers; `reasoning_effort` is sent.
    Copilot,
    /// Azure OpenAI: `POST {base_url}/openai/deployments/{model}/chat/completions?api-version=V`
    /// with an API version, else `{base_url}/openai/v1/chat/completions`; the key goes in the
    /// `api-key` header (a bearer token in `Authorization`).
    Azure {
        /// `azure.apiVersion`; `None` uses the versionless v1 route.
        api_version: Option<String>,
    },
    /// Anthropic's Messages API: `POST {base_url}/v1/messages` (`{base_url}/messages` when the
    /// base already ends in `/v1`), the key in `x-api-key` (a bearer token in
    /// `Authorization`), `anthropic-version: 2023-06-01`.
    Anthropic,
}

/// Which OpenAI wire format (the SDK provider's `wireApi`; Anthropic has its own).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum WireApi {
    /// Chat Completions: `POST .../chat/completions`.
    #[default]
    Completions,
    /// The Responses API: `POST .../responses`.
    Responses,
}

impl WireApi {
    /// The SDK's spelling: `completions` or `responses`.
    pub fn as_str(self) -> &'static str {
        match self {
            WireApi::Completions => "completions",
            WireApi::Responses => "responses",
        }
    }
}

/// A command printing the API key on stdout, run before each model call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyCommand {
    /// Shell command line (run with `sh -c`).
    pub command: String,
    /// Longest run; past it the command is killed and the call fails.
    pub timeout: Duration,
}

impl KeyCommand {
    /// Default longest run of a key command.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

    /// A command with the default timeout.
    pub fn new(command: impl Into<String>) -> Self {
        KeyCommand {
            command: command.into(),
            timeout: Self::DEFAULT_TIMEOUT,
        }
    }
}

/// Where and how to reach a model server over HTTP(S): the configuration of every HTTP
/// provider (Chat Completions, Responses, Anthropic Messages; see [`ApiFlavor`] and
/// [`WireApi`]).
#[derive(Clone, PartialEq, Eq)]
pub struct OpenAiConfig {
    /// Base URL, e.g. `https://api.openai.com/v1` or `http://127.0.0.1:8000/v1`;
    /// `/chat/completions` is appended (see [`ApiFlavor`] for the other kinds).
    pub base_url: String,
    /// What kind of server it is.
    pub flavor: ApiFlavor,
    /// Which OpenAI wire format (ignored for [`ApiFlavor::Anthropic`]).
    pub wire_api: WireApi,
    /// Largest answer asked for, in tokens (Anthropic's required `max_tokens`; sent as
    /// `max_output_tokens` to the Responses API and left out of Chat Completions when `None`).
    pub max_output_tokens: Option<u64>,
    /// API key (Bearer, or `api-key` for Azure); none for local servers.
    pub api_key: Option<String>,
    /// Bearer token: takes precedence over `api_key` and `api_key_command`.
    pub bearer_token: Option<String>,
    /// Runs before each call for a fresh key (takes precedence over `api_key`).
    pub api_key_command: Option<KeyCommand>,
    /// Asked before each call for a bearer token (an SDK client's callback); takes precedence
    /// over every other credential, as in the Copilot CLI.
    pub token_source: Option<super::token_source::SharedTokenSource>,
    /// Makes each call's HTTP request instead of the network (an SDK client that answers the
    /// model calls itself); `None`: the network.
    pub exchange: Option<super::exchange::SharedExchange>,
    /// Extra HTTP headers on every request (a request's own headers override them).
    pub headers: Vec<(String, String)>,
    /// The SDK client's name (`clientName` of a session), told in the `User-Agent` as the
    /// Copilot CLI tells it (`client/<name>`).
    pub client_name: Option<String>,
    /// Model used when a request names none.
    pub model: String,
    /// Request, idle and overall timeouts.
    pub timeouts: Timeouts,
    /// Retries before any output.
    pub retry: RetryPolicy,
    /// How much of an answer is read at most.
    pub limits: ResponseLimits,
}

impl std::fmt::Debug for OpenAiConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the key.
        f.debug_struct("OpenAiConfig")
            .field("base_url", &self.base_url)
            .field("flavor", &self.flavor)
            .field("wire_api", &self.wire_api)
            .field("max_output_tokens", &self.max_output_tokens)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field(
                "bearer_token",
                &self.bearer_token.as_ref().map(|_| "<redacted>"),
            )
            .field("api_key_command", &self.api_key_command)
            .field("token_source", &self.token_source)
            .field("exchange", &self.exchange)
            // Header values may be credentials too.
            .field(
                "headers",
                &self.headers.iter().map(|(n, _)| n).collect::<Vec<_>>(),
            )
            .field("client_name", &self.client_name)
            .field("model", &self.model)
            .field("timeouts", &self.timeouts)
            .field("retry", &self.retry)
            .field("limits", &self.limits)
            .finish()
    }
}

impl OpenAiConfig {
    /// A configuration with no key and the default timeouts and retries.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        OpenAiConfig {
            base_url: base_url.into(),
            flavor: ApiFlavor::OpenAi,
            wire_api: WireApi::Completions,
            max_output_tokens: None,
            api_key: None,
            bearer_token: None,
            api_key_command: None,
            token_source: None,
            exchange: None,
            headers: Vec::new(),
            client_name: None,
            model: model.into(),
            timeouts: Timeouts::default(),
            retry: RetryPolicy::default(),
            limits: ResponseLimits::default(),
        }
    }

    /// The endpoint the Copilot SDK clients configure: `COPILOT_API_URL` as the base, the
    /// GitHub token as bearer.
    pub fn copilot(
        base_url: impl Into<String>,
        model: impl Into<String>,
        token: Option<String>,
    ) -> Self {
        OpenAiConfig {
            flavor: ApiFlavor::Copilot,
            api_key: token,
            ..Self::new(base_url, model)
        }
    }

    /// The GitHub token the Copilot CLI would use: the variable named by `--auth-token-env`
    /// when given, else `COPILOT_SDK_AUTH_TOKEN`, `GH_TOKEN`, `GITHUB_TOKEN` (empty values count
    /// as unset).
    pub fn github_token_from_env(auth_token_env: Option<&str>) -> Option<String> {
        let names: Vec<&str> = match auth_token_env {
            Some(name) => vec![name],
            None => vec!["COPILOT_SDK_AUTH_TOKEN", "GH_TOKEN", "GITHUB_TOKEN"],
        };
        names
            .into_iter()
            .filter_map(|name| std::env::var(name).ok())
            .find(|v| !v.trim().is_empty())
    }

    /// The key from `TURNSTILE_API_KEY`, else `OPENAI_API_KEY` (empty values count as unset).
    pub fn api_key_from_env() -> Option<String> {
        ["TURNSTILE_API_KEY", "OPENAI_API_KEY"]
            .iter()
            .filter_map(|name| std::env::var(name).ok())
            .find(|v| !v.trim().is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_output_hides_credentials() {
        let mut config = OpenAiConfig::new("http://127.0.0.1:1/v1", "m");
        config.api_key = Some("sk-secret".into());
        config.bearer_token = Some("bt-secret".into());
        config.headers = vec![("X-Token".into(), "hdr-secret".into())];
        let shown = format!("{config:?}");
        for secret in ["sk-secret", "bt-secret", "hdr-secret"] {
            assert!(!shown.contains(secret), "{shown}");
        }
        assert!(shown.contains("X-Token"), "{shown}");
    }

    #[test]
    fn retry_delays_grow_with_jitter_and_honour_retry_after() {
        let policy = RetryPolicy {
            max_retries: 3,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(300),
            max_retry_after: Duration::from_millis(1000),
        };
        for _ in 0..50 {
            let d1 = policy.delay(1, None);
            assert!(d1 >= Duration::from_millis(50) && d1 <= Duration::from_millis(100));
            let d2 = policy.delay(2, None);
            assert!(d2 >= Duration::from_millis(100) && d2 <= Duration::from_millis(200));
            let d5 = policy.delay(5, None);
            assert!(d5 >= Duration::from_millis(150) && d5 <= Duration::from_millis(300));
        }
        assert_eq!(
            policy.delay(1, Some(Duration::from_secs(2))),
            Duration::from_millis(1000)
        );
        assert_eq!(
            policy.delay(1, Some(Duration::from_millis(20))),
            Duration::from_millis(20)
        );
    }
}
