//! `GET {base}/models`: the models a server offers, in the shape of the SDK's `models.list`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::super::http::{ApiFlavor, BodyError, OpenAiConfig, Response, quote};
use super::super::{ModelError, ModelErrorKind};
use super::OpenAiProvider;

/// Largest `/models` answer read.
const MAX_MODELS_BODY: usize = 8 * 1024 * 1024;

/// One model as `models.list` reports it (the SDK schema's `Model`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelInfo {
    /// Model identifier, e.g. `gpt-5`.
    pub id: String,
    /// Display name (the id when the server gives none).
    pub name: String,
    /// What the model supports and its token limits.
    pub capabilities: ModelCapabilities,
    /// Policy state, when the server reports one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy: Option<ModelPolicy>,
    /// Reasoning efforts the model accepts (present only when it accepts some).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub supported_reasoning_efforts: Option<Vec<String>>,
}

/// `capabilities` of a [`ModelInfo`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ModelCapabilities {
    /// Feature flags.
    pub supports: ModelSupports,
    /// Token limits.
    pub limits: ModelLimits,
}

/// `capabilities.supports` of a [`ModelInfo`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ModelSupports {
    /// Image input.
    pub vision: bool,
    /// Whether a reasoning effort may be configured.
    #[serde(rename = "reasoningEffort")]
    pub reasoning_effort: bool,
}

/// `capabilities.limits` of a [`ModelInfo`] (0 context window: unknown).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ModelLimits {
    /// Maximum prompt tokens.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_prompt_tokens: Option<u64>,
    /// Maximum output tokens.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u64>,
    /// Maximum context window.
    pub max_context_window_tokens: u64,
}

/// `policy` of a [`ModelInfo`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelPolicy {
    /// `enabled`, `disabled`, `unconfigured`.
    pub state: String,
    /// Terms of use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub terms: Option<String>,
}

/// The `/models` answer: `{"data": [...]}` (OpenAI and the Copilot endpoint alike).
#[derive(Debug, Deserialize)]
struct ModelsBody {
    data: Vec<Value>,
}

/// One entry as the Copilot endpoint sends it (OpenAI's entries have only `id`).
#[derive(Debug, Default, Deserialize)]
struct WireModel {
    #[serde(default)]
    id: String,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    capabilities: WireCapabilities,
    #[serde(default)]
    policy: Option<ModelPolicy>,
}

#[derive(Debug, Default, Deserialize)]
struct WireCapabilities {
    #[serde(default)]
    supports: WireSupports,
    #[serde(default)]
    limits: WireLimits,
}

#[derive(Debug, Default, Deserialize)]
struct WireSupports {
    #[serde(default)]
    vision: Option<bool>,
    #[serde(default)]
    reasoning_effort: Option<Vec<String>>,
}

#[derive(Debug, Default, Deserialize)]
struct WireLimits {
    #[serde(default)]
    max_prompt_tokens: Option<u64>,
    #[serde(default)]
    max_output_tokens: Option<u64>,
    #[serde(default)]
    max_context_window_tokens: Option<u64>,
}

impl From<WireModel> for ModelInfo {
    fn from(m: WireModel) -> Self {
        let efforts = m
            .capabilities
            .supports
            .reasoning_effort
            .filter(|e| !e.is_empty());
        ModelInfo {
            name: m
                .name
                .filter(|n| !n.is_empty())
                .unwrap_or_else(|| m.id.clone()),
            id: m.id,
            capabilities: ModelCapabilities {
                supports: ModelSupports {
                    vision: m.capabilities.supports.vision.unwrap_or(false),
                    reasoning_effort: efforts.is_some(),
                },
                limits: ModelLimits {
                    max_prompt_tokens: m.capabilities.limits.max_prompt_tokens,
                    max_output_tokens: m.capabilities.limits.max_output_tokens,
                    max_context_window_tokens: m
                        .capabilities
                        .limits
                        .max_context_window_tokens
                        .unwrap_or(0),
                },
            },
            policy: m.policy,
            supported_reasoning_efforts: efforts,
        }
    }
}

/// The models the server of `config` offers (`GET {base_url}/models`, with the call's
/// credential and headers), in the server's order. An entry that is not a model object
/// with an `id` is skipped (the rest are still listed).
pub async fn list_models(config: &OpenAiConfig) -> Result<Vec<ModelInfo>, ModelError> {
    OpenAiProvider::new(config.clone())?.list_models().await
}

impl OpenAiProvider {
    /// See [`list_models`].
    pub async fn list_models(&self) -> Result<Vec<ModelInfo>, ModelError> {
        let core = &self.core;
        let url = models_url(&core.config);
        let headers = core.headers(false, &[]).await?;
        let builder = core.client.get(&url).headers(headers);
        let response = Response::Network(core.response_head(&url, builder).await?);
        if !response.is_success() {
            return Err(core.http_error(response).await.0);
        }
        let body = core
            .read_body(response, MAX_MODELS_BODY)
            .await
            .map_err(|e| match e {
                BodyError::TooLarge => ModelError::new(
                    ModelErrorKind::TooLarge,
                    format!("the model list of {url} is larger than {MAX_MODELS_BODY} bytes"),
                ),
                BodyError::Model(e) => e,
            })?;
        let parsed: ModelsBody = serde_json::from_slice(&body).map_err(|e| {
            ModelError::new(
                ModelErrorKind::MalformedResponse,
                format!(
                    "the model list of {url} is not {{\"data\": [...]}} ({e}): {}",
                    quote(&String::from_utf8_lossy(&body))
                ),
            )
        })?;
        Ok(parsed
            .data
            .into_iter()
            .filter_map(|entry| serde_json::from_value::<WireModel>(entry).ok())
            .filter(|m| !m.id.is_empty())
            .map(ModelInfo::from)
            .collect())
    }
}

/// `{base}/models` (a base given as the chat URL loses its `/chat/completions`).
fn models_url(config: &OpenAiConfig) -> String {
    let base = config.base_url.trim_end_matches('/');
    let base = base.strip_suffix("/chat/completions").unwrap_or(base);
    match &config.flavor {
        ApiFlavor::Azure { .. } => {
            let base = base.strip_suffix("/openai").unwrap_or(base);
            format!("{base}/openai/v1/models")
        }
        ApiFlavor::Anthropic => super::super::http::v1_url(base, "models"),
        ApiFlavor::OpenAi | ApiFlavor::Copilot => format!("{base}/models"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_copilot_entry_becomes_an_sdk_model() {
        let entry: WireModel = serde_json::from_value(json!({
            "id": "gpt-5", "name": "GPT-5", "vendor": "x",
            "capabilities": {"family": "gpt-5", "limits": {"max_context_window_tokens": 400000, "max_output_tokens": 128000, "max_prompt_tokens": 272000},
                             "supports": {"streaming": true, "vision": true, "reasoning_effort": ["low", "high"]}},
            "policy": {"state": "enabled", "terms": "t"},
        }))
        .unwrap();
        let info = serde_json::to_value(ModelInfo::from(entry)).unwrap();
        assert_eq!(
            info,
            json!({"id": "gpt-5", "name": "GPT-5",
                   "capabilities": {"supports": {"vision": true, "reasoningEffort": true},
                                    "limits": {"max_prompt_tokens": 272000, "max_output_tokens": 128000, "max_context_window_tokens": 400000}},
                   "policy": {"state": "enabled", "terms": "t"},
                   "supportedReasoningEfforts": ["low", "high"]})
        );
        let openai: WireModel =
            serde_json::from_value(json!({"id": "m", "object": "model", "owned_by": "o"})).unwrap();
        assert_eq!(
            serde_json::to_value(ModelInfo::from(openai)).unwrap(),
            json!({"id": "m", "name": "m", "capabilities": {"supports": {"vision": false, "reasoningEffort": false}, "limits": {"max_context_window_tokens": 0}}})
        );
    }

    #[test]
    fn models_urls() {
        let mut c = OpenAiConfig::new("http://127.0.0.1:1/v1/", "m");
        assert_eq!(models_url(&c), "http://127.0.0.1:1/v1/models");
        c.base_url = "http://127.0.0.1:1/v1/chat/completions".into();
        assert_eq!(models_url(&c), "http://127.0.0.1:1/v1/models");
        c.flavor = ApiFlavor::Copilot;
        c.base_url = "http://127.0.0.1:1".into();
        assert_eq!(models_url(&c), "http://127.0.0.1:1/models");
    }
}
