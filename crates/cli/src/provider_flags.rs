//! The model flags of `run`, `resume` and `config` (each overrides the environment and the
//! settings files; see `config`), and the provider configuration the effective settings make.

use anyhow::{Result, bail};
use clap::{Args, ValueEnum};
use turnstile_providers::{ApiFlavor, KeyCommand, OpenAiConfig, ResponseLimits, WireApi};

use crate::config::{self, Effective, ProviderType, WireApiSetting};

/// Which model answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProviderKind {
    /// Any OpenAI-compatible server (Chat Completions, or the Responses API with --wire-api responses).
    Openai,
    /// Azure OpenAI (deployment URLs, `api-key`).
    Azure,
    /// Anthropic's Messages API.
    Anthropic,
    /// The `assistant.message` events of a recorded journal, in order.
    Replay,
}

/// The OpenAI wire format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum WireApiArg {
    /// Chat Completions.
    Completions,
    /// The Responses API.
    Responses,
}

/// Flags that choose and reach the model.
#[derive(Debug, Clone, Default, Args)]
pub struct ProviderFlags {
    /// Model name sent to the server [default: TURNSTILE_MODEL, COPILOT_MODEL, the settings files' `model`, else gpt-4.1].
    #[arg(long)]
    pub model: Option<String>,
    /// Base URL of the model server (…/v1) [default: TURNSTILE_BASE_URL, COPILOT_PROVIDER_BASE_URL, the settings files' `provider.baseUrl`, else http://127.0.0.1:8000/v1]; the key comes from TURNSTILE_API_KEY, COPILOT_PROVIDER_API_KEY or OPENAI_API_KEY, a bearer token from COPILOT_PROVIDER_BEARER_TOKEN.
    #[arg(long)]
    pub base_url: Option<String>,
    /// Where answers come from [default: COPILOT_PROVIDER_TYPE, the settings files' `provider.type`, else openai].
    #[arg(long, value_enum)]
    pub provider: Option<ProviderKind>,
    /// The OpenAI wire format [default: COPILOT_PROVIDER_WIRE_API, `provider.wireApi`, else completions].
    #[arg(long, value_enum)]
    pub wire_api: Option<WireApiArg>,
    /// A shell command printing the API key, run before each model call (at most 10 s).
    #[arg(long, value_name = "COMMAND")]
    pub api_key_command: Option<String>,
    /// Azure OpenAI API version: the versioned deployment route (else the v1 route).
    #[arg(long, value_name = "VERSION")]
    pub azure_api_version: Option<String>,
    /// An extra HTTP header on every model request, `Name: Value` (repeatable).
    #[arg(long, value_name = "HEADER")]
    pub provider_header: Vec<String>,
    /// Largest answer in tokens (Anthropic's max_tokens, default 8192; the Responses API's max_output_tokens).
    #[arg(long, value_name = "TOKENS", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_output_tokens: Option<u64>,
}

impl ProviderFlags {
    /// Adds what these flags say to `flags`.
    pub fn fill(&self, flags: &mut config::Flags) -> Result<()> {
        flags.model = self.model.clone();
        flags.base_url = self.base_url.clone();
        flags.provider_type = match self.provider {
            Some(ProviderKind::Openai) => Some(ProviderType::Openai),
            Some(ProviderKind::Azure) => Some(ProviderType::Azure),
            Some(ProviderKind::Anthropic) => Some(ProviderType::Anthropic),
            Some(ProviderKind::Replay) | None => None,
        };
        flags.wire_api = self.wire_api.map(|w| match w {
            WireApiArg::Completions => WireApiSetting::Completions,
            WireApiArg::Responses => WireApiSetting::Responses,
        });
        flags.api_key_command = self.api_key_command.clone();
        flags.azure_api_version = self.azure_api_version.clone();
        flags.max_output_tokens = self.max_output_tokens;
        flags.headers = self
            .provider_header
            .iter()
            .map(|h| config::header_line(h).map_err(|e| anyhow::anyhow!("--provider-header: {e}")))
            .collect::<Result<_>>()?;
        Ok(())
    }
}

/// The configuration of the HTTP provider the effective settings name.
pub fn model_config(effective: &Effective, limits: ResponseLimits) -> Result<OpenAiConfig> {
    let mut config = OpenAiConfig::new(
        effective.base_url.value.clone(),
        effective.model.value.clone(),
    );
    config.flavor = match effective.provider_type.value {
        ProviderType::Openai => ApiFlavor::OpenAi,
        ProviderType::Azure => ApiFlavor::Azure {
            api_version: effective
                .azure_api_version
                .as_ref()
                .map(|v| v.value.clone()),
        },
        ProviderType::Anthropic => ApiFlavor::Anthropic,
    };
    config.wire_api = match effective.wire_api.value {
        WireApiSetting::Completions => WireApi::Completions,
        WireApiSetting::Responses => WireApi::Responses,
    };
    config.api_key = effective.api_key.as_ref().map(|k| k.value.clone());
    config.bearer_token = effective.bearer_token.as_ref().map(|k| k.value.clone());
    config.api_key_command = match &effective.api_key_command {
        Some(c) if c.value.trim().is_empty() => {
            bail!("{}: the API key command is empty", c.source)
        }
        Some(c) => Some(KeyCommand::new(c.value.clone())),
        None => None,
    };
    config.headers = effective.headers.iter().map(|h| h.value.clone()).collect();
    config.max_output_tokens = effective.max_output_tokens.as_ref().map(|n| n.value);
    config.limits = limits;
    Ok(config)
}

/// Refuses a base URL that is not an `http://` or `https://` URL with a host, naming where
/// it came from, before any session is created.
pub fn check_base_url(base_url: &config::Sourced<String>) -> Result<()> {
    let text = base_url.value.trim();
    let problem = match url::Url::parse(text) {
        Ok(url) if !matches!(url.scheme(), "http" | "https") => {
            format!("the scheme {:?} is not http or https", url.scheme())
        }
        Ok(url) if url.host_str().is_none_or(str::is_empty) => "it names no host".to_owned(),
        Ok(_) => return Ok(()),
        Err(url::ParseError::RelativeUrlWithoutBase) => "it has no scheme".to_owned(),
        Err(e) => e.to_string(),
    };
    let example = if !text.contains("://") && !text.contains(char::is_whitespace) {
        format!("http://{text}")
    } else {
        crate::config::DEFAULT_BASE_URL.to_owned()
    };
    bail!(
        "{}: base URL {text:?} is not an http:// or https:// URL with a host ({problem}); give one like {example}",
        base_url.source
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Source, Sourced};

    fn check(url: &str) -> Result<()> {
        check_base_url(&Sourced {
            value: url.into(),
            source: Source::Flag("--base-url".into()),
        })
    }

    #[test]
    fn base_urls_need_an_http_scheme_and_a_host() {
        assert!(check("http://127.0.0.1:8000/v1").is_ok());
        assert!(check("https://api.example.com").is_ok());
        for (bad, said) in [
            (
                "127.0.0.1:18015/v1",
                "give one like http://127.0.0.1:18015/v1",
            ),
            ("not a url", "has no scheme"),
            ("htp://127.0.0.1/v1", "\"htp\" is not http or https"),
            ("http://", "empty host"),
            ("file:///tmp/x", "\"file\""),
        ] {
            let e = check(bad).unwrap_err().to_string();
            assert!(e.starts_with("flag --base-url: base URL"), "{e}");
            assert!(e.contains(said), "{bad}: {e}");
        }
    }
}
