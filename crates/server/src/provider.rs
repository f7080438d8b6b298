//! The model of a session: a client's bring-your-own-key `provider`, or the server's default.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Deserialize;
use turnstile_loop::model::{ModelProvider, OpenAiConfig, OpenAiProvider};

use crate::config::DefaultModel;
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
    /// A command printing the key before each request.
    pub api_key_command: Option<String>,
    /// "http" (the default) or "websockets".
    pub transport: Option<String>,
    /// Model id at the provider.
    pub model_id: Option<String>,
    /// Model name sent on the wire.
    pub wire_model: Option<String>,
    /// Extra HTTP headers.
    pub headers: Option<BTreeMap<String, String>>,
}

/// A ready provider and the model name the session records and sends.
pub(crate) struct ChosenModel {
    /// The provider.
    pub provider: Arc<dyn ModelProvider>,
    /// The model name.
    pub model: String,
}

/// Builds the model of a session from the client's `model` and `provider`, else the defaults.
pub(crate) fn choose(
    defaults: &DefaultModel,
    model: Option<&str>,
    provider: Option<&ProviderParams>,
) -> Result<ChosenModel, RpcError> {
    let unsupported = |what: String| {
        RpcError::invalid_params(format!(
            "{what} is not supported by turnstile; use an OpenAI-compatible Chat Completions provider (type \"openai\") with baseUrl and apiKey"
        ))
    };
    let (base_url, api_key, wire_model) = match provider {
        None => (
            defaults.base_url.clone(),
            defaults.api_key.clone(),
            model.unwrap_or(&defaults.model).to_owned(),
        ),
        Some(p) => {
            match p.kind.as_deref() {
                None | Some("openai") => {}
                Some(other) => return Err(unsupported(format!("provider type {other:?}"))),
            }
            match p.wire_api.as_deref() {
                None | Some("completions") => {}
                Some(other) => return Err(unsupported(format!("provider wireApi {other:?}"))),
            }
            match p.transport.as_deref() {
                None | Some("http") => {}
                Some(other) => return Err(unsupported(format!("provider transport {other:?}"))),
            }
            if p.api_key_command.is_some() {
                return Err(unsupported("provider apiKeyCommand".into()));
            }
            if p.has_bearer_token_provider == Some(true) {
                return Err(unsupported("a bearer token provider callback".into()));
            }
            if p.headers.as_ref().is_some_and(|h| !h.is_empty()) {
                return Err(unsupported("custom provider headers".into()));
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
            (
                p.base_url.clone(),
                p.bearer_token.clone().or_else(|| p.api_key.clone()),
                wire.to_owned(),
            )
        }
    };
    let mut config = OpenAiConfig::new(base_url, wire_model.clone());
    config.api_key = api_key.filter(|k| !k.trim().is_empty());
    let provider = OpenAiProvider::new(config)
        .map_err(|e| RpcError::internal(format!("cannot build the model client: {e}")))?;
    Ok(ChosenModel {
        provider: Arc::new(provider),
        model: wire_model,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defaults() -> DefaultModel {
        DefaultModel {
            model: "m0".into(),
            base_url: "http://127.0.0.1:9/v1".into(),
            api_key: None,
        }
    }

    #[test]
    fn picks_the_model_name() {
        assert_eq!(choose(&defaults(), None, None).unwrap().model, "m0");
        assert_eq!(choose(&defaults(), Some("m1"), None).unwrap().model, "m1");
        let p = ProviderParams {
            base_url: "http://127.0.0.1:1/v1".into(),
            wire_model: Some("wire".into()),
            ..Default::default()
        };
        assert_eq!(
            choose(&defaults(), Some("m1"), Some(&p)).unwrap().model,
            "wire"
        );
    }

    #[test]
    fn refuses_what_it_cannot_do() {
        for p in [
            ProviderParams {
                kind: Some("anthropic".into()),
                base_url: "x".into(),
                ..Default::default()
            },
            ProviderParams {
                wire_api: Some("responses".into()),
                base_url: "x".into(),
                ..Default::default()
            },
            ProviderParams {
                base_url: " ".into(),
                ..Default::default()
            },
        ] {
            let e = choose(&defaults(), None, Some(&p)).err().unwrap();
            assert_eq!(e.code, crate::rpc::codes::INVALID_PARAMS, "{e}");
        }
    }
}
