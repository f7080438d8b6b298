//! The model of a session: a client's bring-your-own-key `provider`, or the server's default
//! (an OpenAI-compatible server, or the Copilot endpoint of `COPILOT_API_URL`).

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Deserialize;
use turnstile_providers::{
    ApiFlavor, KeyCommand, ModelError, ModelInfo, ModelProvider, OpenAiConfig, SharedTokenSource,
    WireApi, http_provider, list_models,
};

use crate::rpc::RpcError;

/// `provider` of `session.create`/`session.resume` (the schema's `ProviderConfig`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ProviderParams {
    /// "openai" (the default), "azure" or "anthropic".
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// "completions" (the default) or "responses".
    pub wire_api: Option<String>,
    /// Base URL of the API.
    pub base_url: String,
    /// API key.
    pub api_key: Option<String>,
    /// Bearer token (takes precedence over `apiKey`).
    pub bearer_token: Option<String>,
    /// The client provides tokens through a callback.
    pub has_bearer_token_provider: Option<bool>,
    /// A command printing the key, run before each model call (a turnstile extension).
    pub api_key_command: Option<String>,
    /// "http" (the default) or "websockets".
    pub transport: Option<String>,
    /// Azure options.
    pub azure: Option<AzureParams>,
    /// Model id at the provider.
    pub model_id: Option<String>,
    /// Model name sent on the wire.
    pub wire_model: Option<String>,
    /// Extra HTTP headers.
    pub headers: Option<BTreeMap<String, String>>,
    /// Largest answer in tokens (Anthropic's `max_tokens`, the Responses API's
    /// `max_output_tokens`).
    pub max_output_tokens: Option<f64>,
    /// Largest request in tokens: the model's context window for this session (the
    /// compaction threshold is a share of it).
    pub max_prompt_tokens: Option<f64>,
}

/// `provider.azure`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AzureParams {
    /// API version: the versioned deployment route; absent: the versionless v1 route.
    pub api_version: Option<String>,
}

/// A ready provider and the model name the session records and sends.
pub(crate) struct ChosenModel {
    /// The provider.
    pub provider: Arc<dyn ModelProvider>,
    /// Its configuration (for `session.provider.getEndpoint`).
    pub config: OpenAiConfig,
    /// The model name.
    pub model: String,
}

/// Builds the model of a session from the client's `model` and `provider`, else the defaults.
/// `token_source` is asked for every call's bearer token when the provider says the client
/// has a callback (`hasBearerTokenProvider`); such a provider without one is refused.
pub(crate) fn choose(
    defaults: &OpenAiConfig,
    model: Option<&str>,
    provider: Option<&ProviderParams>,
    token_source: Option<SharedTokenSource>,
) -> Result<ChosenModel, RpcError> {
    let config = match provider {
        None => {
            let mut config = defaults.clone();
            if let Some(model) = model {
                config.model = model.to_owned();
            }
            config.api_key = defaults.api_key.clone().filter(|k| !k.trim().is_empty());
            config
        }
        Some(p) => {
            let mut config = byok(defaults, model, p)?;
            if p.has_bearer_token_provider == Some(true) {
                config.token_source = Some(token_source.ok_or_else(|| {
                    RpcError::invalid_params(
                        "provider.hasBearerTokenProvider: no client connection to ask for the token",
                    )
                })?);
            }
            config
        }
    };
    let wire_model = config.model.clone();
    let mut config = config;
    config.limits = defaults.limits;
    config.timeouts = defaults.timeouts;
    // A client's own provider is reached through the same exchange as the default one.
    config.exchange = defaults.exchange.clone();
    let provider = http_provider(config.clone())
        .map_err(|e| RpcError::internal(format!("cannot build the model client: {e}")))?;
    Ok(ChosenModel {
        provider,
        config,
        model: wire_model,
    })
}

/// The configuration of a client's own provider; what turnstile cannot do is refused with
/// -32602 saying what to use instead.
fn byok(
    defaults: &OpenAiConfig,
    model: Option<&str>,
    p: &ProviderParams,
) -> Result<OpenAiConfig, RpcError> {
    let unsupported = |what: String| {
        RpcError::invalid_params(format!(
            "{what} is not supported by turnstile; use a provider of type \"openai\", \"azure\" or \"anthropic\" over HTTP with baseUrl and apiKey or bearerToken"
        ))
    };
    let flavor = match p.kind.as_deref() {
        None | Some("openai") => ApiFlavor::OpenAi,
        Some("azure") => ApiFlavor::Azure {
            api_version: p
                .azure
                .as_ref()
                .and_then(|a| a.api_version.clone())
                .filter(|v| !v.trim().is_empty()),
        },
        Some("anthropic") => ApiFlavor::Anthropic,
        Some(other) => return Err(unsupported(format!("provider type {other:?}"))),
    };
    // Ignored for Anthropic, as the Copilot CLI ignores it (with a warning) there.
    let wire_api = match p.wire_api.as_deref() {
        None | Some("completions") => WireApi::Completions,
        Some("responses") => WireApi::Responses,
        Some(other) => return Err(unsupported(format!("provider wireApi {other:?}"))),
    };
    match p.transport.as_deref() {
        None | Some("http") => {}
        Some(other) => return Err(unsupported(format!("provider transport {other:?}"))),
    }
    if p.base_url.trim().is_empty() {
        return Err(RpcError::invalid_params("provider.baseUrl is empty"));
    }
    let wire = p
        .wire_model
        .as_deref()
        .or(model)
        .or(p.model_id.as_deref())
        .unwrap_or(&defaults.model);
    let mut config = OpenAiConfig::new(p.base_url.clone(), wire);
    config.flavor = flavor;
    config.wire_api = wire_api;
    config.max_output_tokens = match p.max_output_tokens {
        None => None,
        Some(n) if n.is_finite() && n >= 1.0 && n.fract() == 0.0 => Some(n as u64),
        Some(n) => {
            return Err(RpcError::invalid_params(format!(
                "provider.maxOutputTokens must be a whole number of at least 1, not {n}"
            )));
        }
    };
    config.api_key = p.api_key.clone().filter(|k| !k.trim().is_empty());
    config.bearer_token = p.bearer_token.clone().filter(|k| !k.trim().is_empty());
    config.api_key_command = match p.api_key_command.as_deref().map(str::trim) {
        Some("") => return Err(RpcError::invalid_params("provider.apiKeyCommand is empty")),
        Some(command) => Some(KeyCommand::new(command)),
        None => None,
    };
    config.headers = p
        .headers
        .iter()
        .flatten()
        .map(|(n, v)| (n.clone(), v.clone()))
        .collect();
    Ok(config)
}

/// The models of the server's default endpoint when it is the Copilot endpoint (its
/// `GET /models`); `None` for an OpenAI-compatible default, whose one model is the default.
pub(crate) async fn list_default_models(
    defaults: &OpenAiConfig,
) -> Option<Result<Vec<ModelInfo>, ModelError>> {
    if defaults.flavor != ApiFlavor::Copilot {
        return None;
    }
    let mut config = OpenAiConfig::copilot(
        defaults.base_url.clone(),
        defaults.model.clone(),
        defaults.api_key.clone(),
    );
    config.limits = defaults.limits;
    Some(list_models(&config).await)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defaults() -> OpenAiConfig {
        OpenAiConfig::new("http://127.0.0.1:9/v1", "m0")
    }

    #[test]
    fn picks_the_model_name() {
        assert_eq!(choose(&defaults(), None, None, None).unwrap().model, "m0");
        assert_eq!(
            choose(&defaults(), Some("m1"), None, None).unwrap().model,
            "m1"
        );
        let p = ProviderParams {
            base_url: "http://127.0.0.1:1/v1".into(),
            wire_model: Some("wire".into()),
            ..Default::default()
        };
        assert_eq!(
            choose(&defaults(), Some("m1"), Some(&p), None)
                .unwrap()
                .model,
            "wire"
        );
    }

    #[test]
    fn byok_options_reach_the_provider_config() {
        let p = ProviderParams {
            kind: Some("azure".into()),
            base_url: "http://127.0.0.1:1".into(),
            api_key: Some("k".into()),
            bearer_token: Some("b".into()),
            api_key_command: Some("vault read key".into()),
            azure: Some(AzureParams {
                api_version: Some("2024-10-21".into()),
            }),
            headers: Some(BTreeMap::from([("X-A".to_string(), "1".to_string())])),
            ..Default::default()
        };
        let config = byok(&defaults(), Some("gpt-4.1"), &p).unwrap();
        assert_eq!(
            config.flavor,
            ApiFlavor::Azure {
                api_version: Some("2024-10-21".into())
            }
        );
        assert_eq!(
            (config.api_key.as_deref(), config.bearer_token.as_deref()),
            (Some("k"), Some("b"))
        );
        assert_eq!(
            config.api_key_command,
            Some(KeyCommand::new("vault read key"))
        );
        assert_eq!(config.headers, vec![("X-A".to_string(), "1".to_string())]);
        assert_eq!(config.model, "gpt-4.1");
    }

    #[test]
    fn each_provider_type_and_wire_api_is_taken() {
        let p = |kind: &str, wire: Option<&str>| ProviderParams {
            kind: Some(kind.into()),
            wire_api: wire.map(str::to_string),
            base_url: "http://127.0.0.1:1".into(),
            max_output_tokens: Some(1024.0),
            ..Default::default()
        };
        let config = byok(&defaults(), None, &p("anthropic", Some("responses"))).unwrap();
        assert_eq!(config.flavor, ApiFlavor::Anthropic);
        assert_eq!(config.max_output_tokens, Some(1024));
        let config = byok(&defaults(), None, &p("openai", Some("responses"))).unwrap();
        assert_eq!(
            (config.flavor, config.wire_api),
            (ApiFlavor::OpenAi, WireApi::Responses)
        );
        for (kind, wire, name) in [
            ("anthropic", None, "anthropic"),
            ("openai", Some("responses"), "openai-responses"),
            ("azure", Some("responses"), "openai-responses"),
            ("openai", None, "openai"),
        ] {
            let chosen = choose(&defaults(), None, Some(&p(kind, wire)), None).unwrap();
            assert_eq!(chosen.provider.name(), name);
        }
    }

    #[test]
    fn refuses_what_it_cannot_do() {
        for p in [
            ProviderParams {
                kind: Some("vertex".into()),
                base_url: "x".into(),
                ..Default::default()
            },
            ProviderParams {
                wire_api: Some("chat".into()),
                base_url: "x".into(),
                ..Default::default()
            },
            ProviderParams {
                base_url: "x".into(),
                max_output_tokens: Some(0.5),
                ..Default::default()
            },
            ProviderParams {
                base_url: " ".into(),
                ..Default::default()
            },
            ProviderParams {
                base_url: "x".into(),
                has_bearer_token_provider: Some(true),
                ..Default::default()
            },
            ProviderParams {
                base_url: "x".into(),
                api_key_command: Some("  ".into()),
                ..Default::default()
            },
        ] {
            let e = choose(&defaults(), None, Some(&p), None).err().unwrap();
            assert_eq!(e.code, crate::rpc::codes::INVALID_PARAMS, "{e}");
        }
    }

    #[tokio::test]
    async fn only_the_copilot_endpoint_lists_models() {
        assert!(list_default_models(&defaults()).await.is_none());
    }
}
