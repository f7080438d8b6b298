//! What every HTTP(S) provider shares, whatever its wire format: the configuration (`config`),
//! the credential of a call (`auth`) and the sources asked for it (`token_source`), the endpoint as a client reads it back (`endpoint`), the client and its sending and reading within timeouts, or the exchange that makes the request instead (`exchange`),
//! and size limits (`transport`), the budget of a streamed answer (`budget`), retries before any output (`retry`), the errors of a bad
//! answer (`errors`), URL pieces (`url`), the JSON shared by the formats (`wire` for answers,
//! `request` for the OpenAI request bodies), and the one provider generic over its wire
//! (`provider`).
//!
//! A provider (`openai`, `responses`, `anthropic`) is a [`Wire`]: its URL, its request body
//! and the reading of its answer; [`HttpProvider`] does the rest.

mod auth;
mod budget;
mod config;
mod endpoint;
mod errors;
mod exchange;
mod provider;
pub(crate) mod request;
mod retry;
mod token_source;
mod transport;
mod url;
pub(crate) mod wire;

pub(crate) use budget::AnswerBudget;
pub use config::{
    ApiFlavor, KeyCommand, OpenAiConfig, ResponseLimits, RetryPolicy, Timeouts, WireApi,
};
pub use endpoint::{ProviderEndpoint, provider_endpoint};
pub(crate) use errors::{check_answer_size, malformed, quote};
pub use exchange::{Exchange, ExchangeRequest, ExchangeResponse, ResponseBody, SharedExchange};
pub use provider::HttpProvider;
pub(crate) use provider::{Answered, Assembly, Wire};
pub use token_source::{EnvToken, SharedTokenSource, TokenSource};
pub(crate) use transport::{BodyError, Response};
pub(crate) use url::{encode, v1_url};
