//! Routes a request to its method, after the connection-token check, and parses its params.

use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::methods::{
    Ctx, event_log, history, lifecycle, listing, log, mcp, mcp_apps, mcp_builtin, mcp_config,
    mcp_launch, mcp_oauth, mcp_resources, mcp_sampling, mcp_servers, options, pending, permissions,
    plan, rewind, server as server_methods, session, unsupported,
};
use crate::peer::Peer;
use crate::rpc::{RpcError, codes, kind_of};
use crate::server::Server;

/// Every method this server answers (besides the unsupported ones' explained `-32601`);
/// `docs/protocol.md` lists them.
// Read by the documentation check below and by scripts/protocol-methods.py, not at run time.
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) const SERVED: &[&str] = &[
    "connect",
    "ping",
    "status.get",
    "auth.getStatus",
    "models.list",
    "runtime.shutdown",
    "session.create",
    "session.resume",
    "session.detach",
    "session.destroy",
    "session.delete",
    "session.list",
    "session.getLastId",
    "session.getMetadata",
    "session.send",
    "session.sendAndWait",
    "session.abort",
    "session.getMessages",
    "session.mode.get",
    "session.mode.set",
    "session.model.getCurrent",
    "session.model.switchTo",
    "session.log",
    "session.history.compact",
    "session.history.truncate",
    "session.history.listRewindPoints",
    "session.history.previewRewind",
    "session.history.rewind",
    "session.options.update",
    "session.name.get",
    "session.name.set",
    "session.getForeground",
    "session.setForeground",
    "session.plan.read",
    "session.plan.update",
    "session.plan.delete",
    "mcp.config.list",
    "mcp.config.add",
    "mcp.config.update",
    "mcp.config.remove",
    "mcp.config.enable",
    "mcp.config.disable",
    "mcp.config.reload",
    "session.mcp.list",
    "session.mcp.listTools",
    "session.mcp.enable",
    "session.mcp.disable",
    "session.mcp.reload",
    "session.mcp.startServer",
    "session.mcp.stopServer",
    "session.mcp.restartServer",
    "session.mcp.isServerRunning",
    "session.mcp.resources.list",
    "session.mcp.resources.listTemplates",
    "session.mcp.resources.read",
    "session.mcp.reloadWithConfig",
    "session.mcp.executeSampling",
    "session.mcp.cancelSamplingExecution",
    "session.mcp.setEnvValueMode",
    "session.mcp.removeGitHub",
    "session.mcp.configureGitHub",
    "session.mcp.registerExternalClient",
    "session.mcp.unregisterExternalClient",
    "session.mcp.oauth.handlePendingRequest",
    "session.mcp.oauth.authenticationStateChanged",
    "session.mcp.oauth.login",
    "session.mcp.oauth.respond",
    "session.mcp.headers.handlePendingHeadersRefreshRequest",
    "session.mcp.apps.readResource",
    "session.mcp.apps.listTools",
    "session.mcp.apps.callTool",
    "session.mcp.apps.setHostContext",
    "session.mcp.apps.getHostContext",
    "session.mcp.apps.diagnose",
    "session.eventLog.read",
    "session.eventLog.tail",
    "session.eventLog.registerInterest",
    "session.eventLog.releaseInterest",
    "session.tools.handlePendingToolCall",
    "session.permissions.handlePendingPermissionRequest",
    "session.permissions.pendingRequests",
    "session.permissions.setApproveAll",
    "session.permissions.setRequired",
    "session.permissions.configure",
    "session.permissions.modifyRules",
    "session.permissions.resetSessionApprovals",
    "session.permissions.notifyPromptShown",
    "session.permissions.paths.list",
    "session.permissions.paths.add",
    "session.permissions.paths.updatePrimary",
    "session.permissions.paths.isPathWithinAllowedDirectories",
    "session.permissions.paths.isPathWithinWorkspace",
    "session.permissions.urls.setUnrestrictedMode",
    "session.permissions.locations.resolve",
    "session.permissions.locations.apply",
    "session.permissions.locations.addToolApproval",
    "session.permissions.folderTrust.isTrusted",
    "session.permissions.folderTrust.addTrusted",
];

/// Handles one request.
pub(crate) async fn call(
    server: &Server,
    peer: &Arc<Peer>,
    method: &str,
    params: Value,
) -> Result<Value, RpcError> {
    if method != "connect" && !peer.is_authorized() {
        return Err(RpcError::new(
            codes::UNAUTHORIZED,
            "this server requires a connection token: call `connect` with the token first",
        ));
    }
    let ctx = Ctx { server, peer };
    match method {
        "connect" => server_methods::connect(&ctx, parse(params)?),
        "ping" => server_methods::ping(parse(params)?),
        "status.get" => Ok(server_methods::status()),
        "auth.getStatus" => Ok(server_methods::auth_status(&ctx)),
        "models.list" => server_methods::models(&ctx).await,
        "runtime.shutdown" => Ok(server_methods::shutdown(&ctx)),

        "session.create" => lifecycle::create(&ctx, parse(params)?).await,
        "session.resume" => lifecycle::resume(&ctx, parse(params)?).await,
        "session.detach" | "session.destroy" => lifecycle::detach(&ctx, parse(params)?).await,
        "session.delete" => lifecycle::delete(&ctx, parse(params)?).await,
        "session.list" => listing::list(&ctx, parse(params)?).await,
        "session.getLastId" => listing::last_id(&ctx).await,
        "session.getMetadata" => listing::metadata(&ctx, parse(params)?).await,

        "session.send" => session::send(&ctx, parse(params)?),
        "session.sendAndWait" => session::send_and_wait(&ctx, parse(params)?).await,
        "session.abort" => session::abort(&ctx, parse(params)?),
        "session.getMessages" => session::messages(&ctx, parse(params)?),
        "session.mode.get" => session::mode_get(&ctx, parse(params)?),
        "session.mode.set" => session::mode_set(&ctx, parse(params)?).await,
        "session.model.getCurrent" => session::model_current(&ctx, parse(params)?),
        "session.name.get" => session::name_get(&ctx, parse(params)?),
        "session.model.switchTo" => session::model_switch(&ctx, parse(params)?).await,
        "session.name.set" => session::name_set(&ctx, parse(params)?).await,
        "session.log" => log::log(&ctx, parse(params)?).await,
        "session.history.compact" => history::compact(&ctx, parse(params)?).await,
        "session.history.truncate" => rewind::truncate(&ctx, parse(params)?).await,
        "session.history.listRewindPoints" => rewind::list_points(&ctx, parse(params)?),
        "session.history.previewRewind" => rewind::preview(&ctx, parse(params)?),
        "session.history.rewind" => rewind::rewind(&ctx, parse(params)?).await,
        "session.options.update" => options::update(&ctx, params).await,
        "session.getForeground" => Ok(session::foreground_get()),
        "session.setForeground" => Ok(session::foreground_set()),
        "session.plan.read" => plan::read(&ctx, parse(params)?),
        "session.plan.update" => plan::update(&ctx, parse(params)?),
        "session.plan.delete" => plan::delete(&ctx, parse(params)?),
        "mcp.config.list" => mcp_config::list(&ctx),
        "mcp.config.add" => mcp_config::add(&ctx, parse(params)?),
        "mcp.config.update" => mcp_config::update(&ctx, parse(params)?),
        "mcp.config.remove" => mcp_config::remove(&ctx, parse(params)?),
        "mcp.config.enable" => mcp_config::enable(&ctx, parse(params)?),
        "mcp.config.disable" => mcp_config::disable(&ctx, parse(params)?),
        "mcp.config.reload" => Ok(mcp_config::reload()),
        "session.mcp.list" => mcp::list(&ctx, parse(params)?),
        "session.mcp.listTools" => mcp::list_tools(&ctx, parse(params)?),
        "session.mcp.enable" => mcp::enable(&ctx, parse(params)?).await,
        "session.mcp.disable" => mcp::disable(&ctx, parse(params)?).await,
        "session.mcp.reload" => mcp_launch::reload(&ctx, parse(params)?).await,
        "session.mcp.reloadWithConfig" => {
            mcp_launch::reload_with_config(&ctx, parse(params)?).await
        }
        "session.mcp.setEnvValueMode" => mcp_launch::set_env_value_mode(&ctx, parse(params)?),
        "session.mcp.executeSampling" => mcp_sampling::execute(&ctx, parse(params)?).await,
        "session.mcp.cancelSamplingExecution" => mcp_sampling::cancel(&ctx, parse(params)?),
        "session.mcp.removeGitHub" => mcp_builtin::remove_github(&ctx, parse(params)?),
        "session.mcp.configureGitHub" => mcp_builtin::configure_github(&ctx, parse(params)?),
        "session.mcp.registerExternalClient" => {
            mcp_builtin::register_external(&ctx, parse(params)?)
        }
        "session.mcp.unregisterExternalClient" => {
            mcp_builtin::unregister_external(&ctx, parse(params)?)
        }
        "session.mcp.oauth.handlePendingRequest"
        | "session.mcp.headers.handlePendingHeadersRefreshRequest" => {
            mcp_oauth::handle_pending(&ctx, parse(params)?)
        }
        "session.mcp.oauth.authenticationStateChanged" => {
            mcp_oauth::state_changed(&ctx, parse(params)?)
        }
        "session.mcp.oauth.login" => mcp_oauth::login(&ctx, parse(params)?).await,
        "session.mcp.oauth.respond" => mcp_oauth::respond(&ctx, parse(params)?),
        "session.mcp.apps.getHostContext" => mcp_apps::get_host_context(&ctx, parse(params)?),
        "session.mcp.apps.setHostContext" => mcp_apps::set_host_context(&ctx, parse(params)?),
        "session.mcp.apps.diagnose" => mcp_apps::diagnose(&ctx, parse(params)?),
        "session.mcp.apps.listTools" => mcp_apps::list_tools(&ctx, parse(params)?),
        "session.mcp.apps.callTool" => mcp_apps::call_tool(&ctx, parse(params)?).await,
        "session.mcp.apps.readResource" => mcp_apps::read_resource(&ctx, parse(params)?).await,
        "session.mcp.startServer" => mcp_servers::start(&ctx, parse(params)?).await,
        "session.mcp.stopServer" => mcp_servers::stop(&ctx, parse(params)?).await,
        "session.mcp.restartServer" => mcp_servers::restart(&ctx, parse(params)?).await,
        "session.mcp.isServerRunning" => mcp_servers::is_running(&ctx, parse(params)?),
        "session.mcp.resources.list" => mcp_resources::list(&ctx, parse(params)?).await,
        "session.mcp.resources.listTemplates" => {
            mcp_resources::list_templates(&ctx, parse(params)?).await
        }
        "session.mcp.resources.read" => mcp_resources::read(&ctx, parse(params)?).await,

        "session.eventLog.read" => event_log::read(&ctx, parse(params)?).await,
        "session.eventLog.tail" => event_log::tail(&ctx, parse(params)?),
        "session.eventLog.registerInterest" => event_log::register_interest(&ctx, parse(params)?),
        "session.eventLog.releaseInterest" => event_log::release_interest(&ctx, parse(params)?),

        "session.tools.handlePendingToolCall" => pending::tool_call(&ctx, parse(params)?),
        "session.permissions.pendingRequests" => pending::pending_permissions(&ctx, parse(params)?),
        "session.permissions.handlePendingPermissionRequest" => {
            pending::permission(&ctx, parse(params)?)
        }
        "session.permissions.setApproveAll" => permissions::set_approve_all(&ctx, parse(params)?),
        "session.permissions.setRequired" => permissions::set_required(&ctx, parse(params)?),
        "session.permissions.configure" => permissions::configure(&ctx, parse(params)?),
        "session.permissions.modifyRules" => permissions::modify_rules(&ctx, parse(params)?),
        "session.permissions.resetSessionApprovals" => {
            permissions::reset_session_approvals(&ctx, parse(params)?)
        }
        "session.permissions.notifyPromptShown" => {
            permissions::notify_prompt_shown(&ctx, parse(params)?)
        }
        "session.permissions.paths.list" => permissions::paths_list(&ctx, parse(params)?),
        "session.permissions.paths.add" => permissions::paths_add(&ctx, parse(params)?),
        "session.permissions.paths.updatePrimary" => {
            permissions::paths_update_primary(&ctx, parse(params)?)
        }
        "session.permissions.paths.isPathWithinAllowedDirectories" => {
            permissions::paths_allowed(&ctx, parse(params)?)
        }
        "session.permissions.paths.isPathWithinWorkspace" => {
            permissions::paths_workspace(&ctx, parse(params)?)
        }
        "session.permissions.urls.setUnrestrictedMode" => {
            permissions::urls_set_unrestricted(&ctx, parse(params)?)
        }
        "session.permissions.locations.resolve" => {
            permissions::locations_resolve(&ctx, parse(params)?)
        }
        "session.permissions.locations.apply" => permissions::locations_apply(&ctx, parse(params)?),
        "session.permissions.locations.addToolApproval" => {
            permissions::locations_add_tool_approval(&ctx, parse(params)?)
        }
        "session.permissions.folderTrust.isTrusted" => {
            permissions::folder_is_trusted(&ctx, parse(params)?)
        }
        "session.permissions.folderTrust.addTrusted" => {
            permissions::folder_add_trusted(&ctx, parse(params)?)
        }

        _ if unsupported::UNHANDLED_BY_THE_CLI.contains(&method) => Err(RpcError::unhandled(
            method,
            unsupported::reason(method).unwrap_or_default(),
        )),
        _ => Err(RpcError::method_not_found(
            method,
            unsupported::reason(method),
        )),
    }
}

/// Parses by-name params into `T`; absent params count as `{}`. Fields `T` does not know are
/// ignored (the SDKs send many options this engine has no use for); a field of the wrong type
/// is an error that names it.
pub(crate) fn parse<T: DeserializeOwned>(params: Value) -> Result<T, RpcError> {
    let params = match params {
        Value::Null => Value::Object(Default::default()),
        Value::Object(obj) => Value::Object(obj),
        other => {
            return Err(RpcError::invalid_params(format!(
                "params must be an object (by-name), got {}",
                kind_of(&other)
            )));
        }
    };
    serde_path_to_error::deserialize(params).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        if path == "." {
            RpcError::invalid_params(format!("invalid params: {inner}"))
        } else {
            RpcError::invalid_params(format!("invalid params: {path}: {inner}"))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    /// Every `rpcMethod` of the SDK's schema, with its side (`server`, `session`: the client
    /// calls it; `clientSession`, `clientGlobal`: the server would call the client).
    fn schema_methods() -> Vec<(String, String)> {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../fixtures/schema/api.schema.json"
        );
        let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        fn walk(node: &Value, side: &str, out: &mut Vec<(String, String)>) {
            if let Some(method) = node.get("rpcMethod").and_then(Value::as_str) {
                out.push((method.to_owned(), side.to_owned()));
                return;
            }
            if let Value::Object(map) = node {
                for v in map.values() {
                    walk(v, side, out);
                }
            }
        }
        let mut out = Vec::new();
        for side in ["server", "session", "clientSession", "clientGlobal"] {
            walk(&schema[side], side, &mut out);
        }
        out
    }

    #[test]
    fn every_schema_method_is_served_or_explained_and_documented() {
        let docs = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../docs/protocol.md"
        ))
        .unwrap();
        let methods = schema_methods();
        assert!(methods.len() > 300, "the schema was read");
        for (method, side) in &methods {
            assert!(
                docs.contains(&format!("`{method}`")),
                "docs/protocol.md does not list {method}"
            );
            let client_side = side.starts_with("client");
            assert!(
                client_side
                    || SERVED.contains(&method.as_str())
                    || crate::methods::unsupported::reason(method).is_some(),
                "{method} is neither served nor explained"
            );
        }
        for method in SERVED {
            assert!(
                docs.contains(&format!("`{method}`")),
                "docs/protocol.md does not list the served {method}"
            );
        }
    }

    #[derive(Debug, Deserialize)]
    #[serde(rename_all = "camelCase")]
    #[allow(dead_code)]
    struct P {
        session_id: String,
        count: Option<u32>,
    }

    #[test]
    fn errors_name_the_field() {
        let e = parse::<P>(json!({"sessionId": 5})).unwrap_err();
        assert_eq!(e.code, codes::INVALID_PARAMS);
        assert!(
            e.message.contains("sessionId") && e.message.contains("integer"),
            "{e}"
        );
        let e = parse::<P>(json!({})).unwrap_err();
        assert!(e.message.contains("missing field `sessionId`"), "{e}");
        let e = parse::<P>(json!([1])).unwrap_err();
        assert!(e.message.contains("by-name"), "{e}");
        assert!(parse::<P>(json!({"sessionId": "x", "other": true})).is_ok());
    }
}
