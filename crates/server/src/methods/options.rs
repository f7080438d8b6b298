//! `session.options.update`: the options the official TypeScript client patches after
//! create/resume (every one in its `mode: "empty"`), and those a client changes on an open
//! session (working directory, streaming, `ask_user`). Each either takes effect or already
//! holds for turnstile; the ones that only name the client to services turnstile does not
//! call (`clientName`, `lspClientName`, `integrationId`, `featureFlags`) are checked for
//! their type and change nothing. Any other option is refused by name, so a client never
//! believes a change was made that was not (the Copilot CLI answers `success` to anything).

use serde_json::{Map, Value, json};

use turnstile_loop::LiveOptions;

use super::{Ctx, open_session};
use crate::rpc::{RpcError, codes, kind_of};

/// `session.options.update` `{sessionId, ...options}`: answers `{success: true}` as the Copilot
/// CLI does.
pub(crate) async fn update(ctx: &Ctx<'_>, params: Value) -> Result<Value, RpcError> {
    let Value::Object(mut options) = params else {
        return Err(RpcError::invalid_params(format!(
            "params must be an object, got {}",
            kind_of(&params)
        )));
    };
    let Some(Value::String(id)) = options.remove("sessionId") else {
        return Err(RpcError::invalid_params(
            "sessionId: missing or not a string",
        ));
    };
    let session = open_session(ctx, &id)?;
    let Patch {
        skip,
        mcp_apps,
        live,
        working_directory,
    } = check(&options)?;
    // The directory is checked before anything changes, so a refused patch changes nothing.
    let moved = working_directory
        .map(|dir| super::working_directory::checked(&dir))
        .transpose()
        .map_err(|e| RpcError::invalid_params(format!("workingDirectory: {}", e.message)))?;
    if let Some(on) = mcp_apps {
        session.mcp().set_apps(on);
    }
    let failed = |e: turnstile_loop::LoopError| RpcError::new(codes::SESSION_FAILED, e.to_string());
    if live != LiveOptions::default() {
        session.handle().set_options(live).await.map_err(failed)?;
    }
    if let Some(dir) = moved {
        super::working_directory::move_to(&session, dir).await?;
    }
    if let Some(skip) = skip {
        session
            .handle()
            .skip_custom_instructions(skip)
            .await
            .map_err(|e| RpcError::new(codes::SESSION_FAILED, e.to_string()))?;
    }
    Ok(json!({"success": true}))
}

/// What a valid patch changes.
#[derive(Debug, Default, PartialEq, Eq)]
struct Patch {
    /// `skipCustomInstructions`.
    skip: Option<bool>,
    /// Whether `sessionCapabilities` names `mcp-apps`, when it was given.
    mcp_apps: Option<bool>,
    /// `enableStreaming`, `askUserDisabled`.
    live: LiveOptions,
    /// `workingDirectory`, as given.
    working_directory: Option<String>,
}

/// The session capabilities turnstile can give: MCP Apps (`session.mcp.apps.*`).
const CAPABILITIES: &[&str] = &["mcp-apps"];

/// Validates the patch; returns what it changes in what turnstile does.
fn check(options: &Map<String, Value>) -> Result<Patch, RpcError> {
    let mut patch = Patch::default();
    for (key, value) in options {
        let wrong = |what: &str| {
            RpcError::invalid_params(format!("{key}: {what} (got {})", kind_of(value)))
        };
        match key.as_str() {
            "skipCustomInstructions" => {
                patch.skip = Some(value.as_bool().ok_or_else(|| wrong("expected a boolean"))?);
            }
            "enableStreaming" => {
                patch.live.streaming =
                    Some(value.as_bool().ok_or_else(|| wrong("expected a boolean"))?);
            }
            "askUserDisabled" => {
                patch.live.ask_user_disabled =
                    Some(value.as_bool().ok_or_else(|| wrong("expected a boolean"))?);
            }
            "workingDirectory" => {
                let dir = value.as_str().ok_or_else(|| wrong("expected a string"))?;
                patch.working_directory = Some(dir.to_owned());
            }
            // They name the client to services turnstile does not call.
            "clientName" | "lspClientName" | "integrationId" => {
                value.as_str().ok_or_else(|| wrong("expected a string"))?;
            }
            "featureFlags" => {
                value
                    .as_object()
                    .ok_or_else(|| wrong("expected an object"))?;
            }
            // Replaces the capability set: only those turnstile has may be named.
            "sessionCapabilities" => {
                let Value::Array(items) = value else {
                    return Err(wrong("expected an array"));
                };
                for item in items {
                    let name = item.as_str().ok_or_else(|| wrong("expected strings"))?;
                    if !CAPABILITIES.contains(&name) {
                        return Err(RpcError::invalid_params(format!(
                            "{key}: {name:?} is not supported: a turnstile session can have only {CAPABILITIES:?}"
                        )));
                    }
                }
                patch.mcp_apps = Some(items.iter().any(|i| i == "mcp-apps"));
            }
            // No custom agents at all: local-only or not, there are none.
            "customAgentsLocalOnly" => {
                value.as_bool().ok_or_else(|| wrong("expected a boolean"))?;
            }
            // Off is what turnstile does: no co-author trailers, no schedules.
            "coauthorEnabled" | "manageScheduleEnabled" => match value {
                Value::Bool(false) => {}
                Value::Bool(true) => {
                    return Err(RpcError::invalid_params(format!(
                        "{key}: true is not supported: turnstile has no co-author trailers or schedules"
                    )));
                }
                _ => return Err(wrong("expected a boolean")),
            },
            // None is what turnstile has: no plugins, no skills.
            "installedPlugins" | "includedBuiltinSkills" => match value {
                Value::Array(items) if items.is_empty() => {}
                Value::Array(_) => {
                    return Err(RpcError::invalid_params(format!(
                        "{key}: only [] is supported: turnstile has no plugins or skills"
                    )));
                }
                _ => return Err(wrong("expected an array")),
            },
            other => {
                return Err(RpcError::invalid_params(format!(
                    "{other}: this option cannot be changed on an open turnstile session; give it in session.create or session.resume"
                )));
            }
        }
    }
    Ok(patch)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn patch(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn the_empty_mode_patch_is_accepted() {
        let empty_mode = patch(json!({
            "skipCustomInstructions": true, "customAgentsLocalOnly": true,
            "coauthorEnabled": false, "manageScheduleEnabled": false,
            "installedPlugins": [], "includedBuiltinSkills": [],
        }));
        assert_eq!(check(&empty_mode).unwrap().skip, Some(true));
        assert_eq!(check(&Map::new()).unwrap(), Patch::default());
    }

    #[test]
    fn a_clients_options_are_read_and_its_names_change_nothing() {
        let update = check(&patch(json!({
            "clientName": "c", "lspClientName": "l", "integrationId": "i",
            "featureFlags": {"f": true}, "workingDirectory": "/w",
            "enableStreaming": false, "askUserDisabled": true,
        })))
        .unwrap();
        assert_eq!(
            update,
            Patch {
                live: LiveOptions {
                    streaming: Some(false),
                    ask_user_disabled: Some(true),
                },
                working_directory: Some("/w".into()),
                ..Patch::default()
            }
        );
    }

    #[test]
    fn the_mcp_apps_capability_is_given_and_taken() {
        let on = check(&patch(json!({"sessionCapabilities": ["mcp-apps"]}))).unwrap();
        assert_eq!(on.mcp_apps, Some(true));
        let off = check(&patch(json!({"sessionCapabilities": []}))).unwrap();
        assert_eq!(off.mcp_apps, Some(false));
    }

    #[test]
    fn what_turnstile_cannot_do_is_refused_by_name() {
        for bad in [
            json!({"coauthorEnabled": true}),
            json!({"includedBuiltinSkills": ["x"]}),
            json!({"skipCustomInstructions": "yes"}),
            json!({"workingDirectory": 7}),
            json!({"enableStreaming": "no"}),
            json!({"featureFlags": []}),
            json!({"memory": true}),
            json!({"sessionCapabilities": ["memory"]}),
            json!({"sessionCapabilities": "mcp-apps"}),
        ] {
            let key = bad.as_object().unwrap().keys().next().unwrap().clone();
            let error = check(&patch(bad)).unwrap_err();
            assert_eq!(error.code, codes::INVALID_PARAMS);
            assert!(error.message.contains(&key), "{}", error.message);
        }
    }
}
