//! Several named providers in one session (`providers` and `models` of `session.create` and
//! `session.resume`, the SDK's `NamedProviderConfig` and `ProviderModelConfig`): a model is
//! chosen by its provider-qualified id, `<provider>/<model id>` (`alpha/sonnet`), and is sent
//! as its `wireModel` to its own provider, with that provider's URL, credential and headers.
//!
//! The selection becomes one [`ProviderParams`], the single `provider` form, so everything a
//! provider does (its kinds, credentials, refusals) is decided in one place (`provider.rs`).

use serde::Deserialize;

use crate::provider::ProviderParams;
use crate::rpc::RpcError;

/// Most providers and models a session may name (each is a few hundred bytes of settings).
pub(crate) const MAX_REGISTRY_ENTRIES: usize = 256;

/// One entry of `providers`: a provider and its name.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct NamedProviderParams {
    /// The name models refer to.
    pub name: String,
    /// The provider itself, as in `provider`.
    #[serde(flatten)]
    pub provider: ProviderParams,
}

/// One entry of `models`: a model offered by a named provider.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ProviderModelParams {
    /// The model's id within its provider (`sonnet` of `alpha/sonnet`).
    pub id: String,
    /// The name of its provider.
    pub provider: String,
    /// The model name sent on the wire; the id when absent.
    pub wire_model: Option<String>,
    /// The model's context window for this session.
    pub max_prompt_tokens: Option<f64>,
    /// Largest answer in tokens.
    pub max_output_tokens: Option<f64>,
}

/// The provider of the selected model `selection` (`<provider>/<model id>`), named, with the
/// model's wire name and limits in it; `None` when the selection names no model of the registry (the
/// session then uses `provider` or the server's default). A registry over
/// [`MAX_REGISTRY_ENTRIES`], or a model whose provider is not in it, is `-32602`.
pub(crate) fn selected(
    selection: Option<&str>,
    providers: &[NamedProviderParams],
    models: &[ProviderModelParams],
) -> Result<Option<(String, ProviderParams)>, RpcError> {
    if providers.len() > MAX_REGISTRY_ENTRIES || models.len() > MAX_REGISTRY_ENTRIES {
        return Err(RpcError::invalid_params(format!(
            "at most {MAX_REGISTRY_ENTRIES} providers and {MAX_REGISTRY_ENTRIES} models may be configured"
        )));
    }
    for model in models {
        if !providers.iter().any(|p| p.name == model.provider) {
            return Err(RpcError::invalid_params(format!(
                "models: {:?} names the provider {:?}, which is not in providers",
                model.id, model.provider
            )));
        }
    }
    let Some((provider_name, model_id)) = selection.and_then(|s| s.split_once('/')) else {
        return Ok(None);
    };
    let Some(model) = models
        .iter()
        .find(|m| m.provider == provider_name && m.id == model_id)
    else {
        return Ok(None);
    };
    let Some(named) = providers.iter().find(|p| p.name == provider_name) else {
        return Ok(None);
    };
    let mut provider = named.provider.clone();
    provider.wire_model = Some(model.wire_model.clone().unwrap_or_else(|| model.id.clone()));
    provider.model_id = Some(model.id.clone());
    if model.max_prompt_tokens.is_some() {
        provider.max_prompt_tokens = model.max_prompt_tokens;
    }
    if model.max_output_tokens.is_some() {
        provider.max_output_tokens = model.max_output_tokens;
    }
    Ok(Some((named.name.clone(), provider)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn registry() -> (Vec<NamedProviderParams>, Vec<ProviderModelParams>) {
        let providers = serde_json::from_value(json!([
            {"name": "alpha", "type": "openai", "baseUrl": "http://127.0.0.1:1/v1",
             "apiKey": "a", "headers": {"X-Provider": "alpha"}},
            {"name": "delta", "type": "openai", "baseUrl": "http://127.0.0.1:2/v1",
             "apiKey": "d"}
        ]))
        .unwrap();
        let models = serde_json::from_value(json!([
            {"id": "sonnet", "provider": "alpha", "wireModel": "byok-gpt-4o", "maxPromptTokens": 111111},
            {"id": "haiku", "provider": "alpha", "wireModel": "byok-gpt-4o-mini"},
            {"id": "turbo", "provider": "delta"}
        ]))
        .unwrap();
        (providers, models)
    }

    #[test]
    fn a_qualified_id_picks_the_provider_and_the_wire_model() {
        let (providers, models) = registry();
        let (name, p) = selected(Some("alpha/haiku"), &providers, &models)
            .unwrap()
            .unwrap();
        assert_eq!(name, "alpha");
        assert_eq!(p.base_url, "http://127.0.0.1:1/v1");
        assert_eq!(p.wire_model.as_deref(), Some("byok-gpt-4o-mini"));
        let (_, p) = selected(Some("alpha/sonnet"), &providers, &models)
            .unwrap()
            .unwrap();
        assert_eq!(p.max_prompt_tokens, Some(111111.0));
        let (name, p) = selected(Some("delta/turbo"), &providers, &models)
            .unwrap()
            .unwrap();
        assert_eq!(name, "delta");
        assert_eq!(
            (p.base_url.as_str(), p.wire_model.as_deref()),
            ("http://127.0.0.1:2/v1", Some("turbo"))
        );
    }

    #[test]
    fn other_selections_leave_the_registry_alone() {
        let (providers, models) = registry();
        for selection in [None, Some("gpt-4o"), Some("alpha/opus"), Some("beta/haiku")] {
            assert!(
                selected(selection, &providers, &models).unwrap().is_none(),
                "{selection:?}"
            );
        }
    }

    #[test]
    fn a_model_of_an_unknown_provider_is_refused() {
        let (providers, mut models) = registry();
        models[0].provider = "gamma".into();
        let e = selected(Some("alpha/haiku"), &providers, &models).unwrap_err();
        assert!(e.message.contains("gamma"), "{}", e.message);
    }
}
