//! `session.permissions.*` besides the answers to requests (`pending.rs`): approve-all, the
//! configured and remembered rules, the path policy's directories, URL mode, locations and
//! folder trust. None of them records an event (the Copilot CLI records none either); the
//! engine decides every later request with what they set.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Value, json};
use turnstile_permissions::{PermissionRule, RuleScope, rules_of_approval};

use super::{Ctx, open_session};
use crate::folder_trust::FolderTrust;
use crate::location_store::{self, LocationStore};
use crate::permission_state::{SessionPermissions, is_absolute_inside};
use crate::rpc::{RpcError, codes};

fn success() -> Value {
    json!({"success": true})
}

/// The runtime's answer to a request it could not carry out: `-32603` with its message,
/// worded as the Copilot CLI words it.
fn failed(method: &str, message: impl std::fmt::Display) -> RpcError {
    RpcError::new(
        codes::INTERNAL_ERROR,
        format!("Request session.permissions.{method} failed with message: {message}"),
    )
}

fn state(ctx: &Ctx<'_>, id: &str) -> Result<Arc<SessionPermissions>, RpcError> {
    Ok(open_session(ctx, id)?.info().permissions)
}

/// `{sessionId, enabled}`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct EnabledParams {
    session_id: String,
    enabled: bool,
}

/// `setApproveAll`: approve every tool request of the session (or stop doing so, also when
/// the server was started with `--allow-all-tools`). Deny rules still refuse.
pub(crate) fn set_approve_all(ctx: &Ctx<'_>, p: EnabledParams) -> Result<Value, RpcError> {
    state(ctx, &p.session_id)?.live.set_approve_all(p.enabled);
    Ok(success())
}

/// `{sessionId, required}`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RequiredParams {
    session_id: String,
    required: bool,
}

/// `setRequired`: whether the client shows permission prompts. `false` makes the session
/// ask nobody: what no rule decides is denied, as in the Copilot CLI; `true` asks the client
/// again (if it declared a permission handler).
pub(crate) fn set_required(ctx: &Ctx<'_>, p: RequiredParams) -> Result<Value, RpcError> {
    state(ctx, &p.session_id)?
        .live
        .set_prompts_wanted(p.required);
    Ok(success())
}

/// `{sessionId, message}`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PromptShownParams {
    session_id: String,
    message: String,
}

/// `notifyPromptShown`: the runtime's `permission_prompt` notification hook has no
/// counterpart here; the prompt is logged.
pub(crate) fn notify_prompt_shown(ctx: &Ctx<'_>, p: PromptShownParams) -> Result<Value, RpcError> {
    state(ctx, &p.session_id)?;
    tracing::info!(session = %p.session_id, message = %p.message, "permission prompt shown");
    Ok(success())
}

/// `{sessionId, includeLocation?}`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ResetParams {
    session_id: String,
    include_location: Option<bool>,
}

/// `resetSessionApprovals`: forgets the session-scoped approvals, and the location-scoped
/// ones unless `includeLocation` is false (the persisted file is kept).
pub(crate) fn reset_session_approvals(ctx: &Ctx<'_>, p: ResetParams) -> Result<Value, RpcError> {
    let state = state(ctx, &p.session_id)?;
    state.live.clear(RuleScope::Session);
    if p.include_location.unwrap_or(true) {
        state.live.clear(RuleScope::Location);
        state.forget_applied();
    }
    Ok(success())
}

/// `{sessionId, scope, add?, remove?, removeAll?}`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ModifyRulesParams {
    session_id: String,
    scope: RuleScope,
    #[serde(default)]
    add: Vec<PermissionRule>,
    #[serde(default)]
    remove: Vec<PermissionRule>,
    #[serde(default)]
    remove_all: bool,
}

/// `modifyRules`: `add` first, then `removeAll` (which makes `remove` moot) or `remove`.
/// Location-scoped changes act on the session's live location rules; what is persisted for
/// the location changes only through `locations.addToolApproval` or an approve-for-location
/// answer, as in the Copilot CLI.
pub(crate) fn modify_rules(ctx: &Ctx<'_>, p: ModifyRulesParams) -> Result<Value, RpcError> {
    let state = state(ctx, &p.session_id)?;
    state.live.add(p.scope, &p.add);
    if p.remove_all {
        state.live.clear(p.scope);
        if p.scope == RuleScope::Location {
            state.forget_applied();
        }
    } else {
        state.live.remove(p.scope, &p.remove);
    }
    Ok(success())
}

/// `configure.rules`.
#[derive(Debug, Deserialize)]
pub(crate) struct RulesSet {
    approved: Vec<PermissionRule>,
    denied: Vec<PermissionRule>,
}

/// `configure.paths`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PathsConfig {
    additional_directories: Option<Vec<String>>,
    workspace_path: Option<String>,
}

/// `configure` params: every field but the id is optional and leaves its setting alone when
/// absent.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ConfigureParams {
    session_id: String,
    approve_all_tool_permission_requests: Option<bool>,
    approve_all_read_permission_requests: Option<bool>,
    rules: Option<RulesSet>,
    paths: Option<PathsConfig>,
}

/// `configure`: replaces the fields given. `paths.additionalDirectories` replaces the
/// directories beside the primary one (each must be absolute); `urls` and content exclusion
/// policies are accepted and change nothing (turnstile's tools fetch no URLs and it has no
/// content exclusion).
pub(crate) fn configure(ctx: &Ctx<'_>, p: ConfigureParams) -> Result<Value, RpcError> {
    let state = state(ctx, &p.session_id)?;
    let (dirs, workspace) = match p.paths {
        Some(paths) => (paths.additional_directories, paths.workspace_path),
        None => (None, None),
    };
    let workspace = workspace
        .map(|w| {
            absolute(&w).map_err(|e| {
                RpcError::invalid_params(format!("invalid params: paths.workspacePath: {e}"))
            })
        })
        .transpose()?;
    let dirs = match dirs {
        Some(dirs) => Some(
            dirs.iter()
                .map(|d| {
                    absolute(d).map_err(|e| {
                        RpcError::invalid_params(format!(
                            "invalid params: paths.additionalDirectories: {e}"
                        ))
                    })
                })
                .collect::<Result<Vec<_>, _>>()?,
        ),
        None => None,
    };
    if let Some(all) = p.approve_all_tool_permission_requests {
        state.live.set_approve_all(all);
    }
    if let Some(reads) = p.approve_all_read_permission_requests {
        state.live.set_approve_reads(reads);
    }
    if let Some(rules) = p.rules {
        state.live.set_rules(rules.approved, rules.denied);
    }
    if let Some(dirs) = dirs {
        state.set_directories(dirs);
    }
    if let Some(workspace) = workspace {
        state.set_workspace(workspace);
    }
    Ok(success())
}

/// An absolute path from a param, else the runtime's complaint.
fn absolute(text: &str) -> Result<PathBuf, String> {
    let path = Path::new(text);
    if path.is_absolute() {
        Ok(path.to_path_buf())
    } else {
        Err(format!("Directory path must be absolute: {text}"))
    }
}

/// `{sessionId, path}`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PathParams {
    session_id: String,
    path: String,
}

/// `paths.list`: the primary directory first, then the others.
pub(crate) fn paths_list(
    ctx: &Ctx<'_>,
    p: super::session_id_params::SessionIdParams,
) -> Result<Value, RpcError> {
    let (primary, all) = state(ctx, p.id())?.directories();
    let text = |p: &Path| p.to_string_lossy().into_owned();
    Ok(json!({
        "directories": all.iter().map(|d| text(d)).collect::<Vec<_>>(),
        "primary": text(&primary),
    }))
}

/// The absolute, existing path a `paths.add`/`updatePrimary` names, resolved through links.
fn existing(method: &str, text: &str) -> Result<PathBuf, RpcError> {
    let path = absolute(text).map_err(|e| failed(method, e))?;
    path.canonicalize().map_err(|_| {
        failed(
            method,
            format!("Directory does not exist or cannot be accessed: {text}"),
        )
    })
}

/// `paths.add`.
pub(crate) fn paths_add(ctx: &Ctx<'_>, p: PathParams) -> Result<Value, RpcError> {
    let state = state(ctx, &p.session_id)?;
    let dir = existing("paths.add", &p.path)?;
    if !state.add_directory(dir) {
        return Err(failed(
            "paths.add",
            format!(
                "the session already allows {} directories",
                crate::permission_state::MAX_DIRECTORIES
            ),
        ));
    }
    Ok(success())
}

/// `paths.updatePrimary`.
pub(crate) fn paths_update_primary(ctx: &Ctx<'_>, p: PathParams) -> Result<Value, RpcError> {
    let state = state(ctx, &p.session_id)?;
    state.set_primary(existing("paths.updatePrimary", &p.path)?);
    Ok(success())
}

/// `paths.isPathWithinAllowedDirectories`.
pub(crate) fn paths_allowed(ctx: &Ctx<'_>, p: PathParams) -> Result<Value, RpcError> {
    let allowed = state(ctx, &p.session_id)?.is_allowed(Path::new(&p.path));
    Ok(json!({ "allowed": allowed }))
}

/// `paths.isPathWithinWorkspace`: the workspace is the session's own directory, or the
/// `paths.workspacePath` the client configured.
pub(crate) fn paths_workspace(ctx: &Ctx<'_>, p: PathParams) -> Result<Value, RpcError> {
    let workspace = state(ctx, &p.session_id)?.workspace();
    let allowed = is_absolute_inside(Path::new(&p.path), std::slice::from_ref(&workspace));
    Ok(json!({ "allowed": allowed }))
}

/// `urls.setUnrestrictedMode`: with `enabled`, every `web_fetch` URL is approved without
/// asking, as the Copilot CLI does (deny rules still refuse, and local addresses stay blocked
/// unless an `--allow-url` names them); `false` asks again.
pub(crate) fn urls_set_unrestricted(ctx: &Ctx<'_>, p: EnabledParams) -> Result<Value, RpcError> {
    state(ctx, &p.session_id)?.live.set_approve_urls(p.enabled);
    Ok(success())
}

/// `{sessionId, workingDirectory}`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct LocationParams {
    session_id: String,
    working_directory: String,
}

/// `locations.resolve`.
pub(crate) fn locations_resolve(ctx: &Ctx<'_>, p: LocationParams) -> Result<Value, RpcError> {
    state(ctx, &p.session_id)?;
    let (key, kind) = location_store::resolve(Path::new(&p.working_directory));
    Ok(json!({"locationKey": key, "locationType": kind}))
}

fn store(ctx: &Ctx<'_>) -> LocationStore {
    LocationStore::beside(ctx.server.config().state_root.dir())
}

/// `locations.apply`: the location's persisted approvals become the session's live location
/// rules (see [`SessionPermissions::apply_location`] for what counts as applied).
pub(crate) fn locations_apply(ctx: &Ctx<'_>, p: LocationParams) -> Result<Value, RpcError> {
    let state = state(ctx, &p.session_id)?;
    let (key, kind) = location_store::resolve(Path::new(&p.working_directory));
    let rules = location_rules(&store(ctx), &key).map_err(|e| failed("locations.apply", e))?;
    let outcome = state.apply_location(&key, rules.clone());
    Ok(json!({
        "locationKey": key,
        "locationType": kind,
        "changed": outcome.changed,
        "appliedRuleCount": outcome.newly_applied,
        "appliedDirectoryCount": 0,
        "appliedRules": rules,
    }))
}

/// The rules of the approvals persisted for `key`.
fn location_rules(
    store: &LocationStore,
    key: &str,
) -> Result<Vec<PermissionRule>, location_store::StoreError> {
    let mut rules: Vec<PermissionRule> = Vec::new();
    for rule in store.approvals(key)?.iter().flat_map(rules_of_approval) {
        if !rules.contains(&rule) {
            rules.push(rule);
        }
    }
    Ok(rules)
}

/// Gives a session opening in `cwd` the approvals persisted for its location, as the Copilot
/// CLI does (its clients need not call `locations.apply` for them to hold). A store that
/// cannot be read costs the approvals, not the session.
pub(crate) fn open_with_location_rules(state_dir: &Path, cwd: &Path, state: &SessionPermissions) {
    let (key, _) = location_store::resolve(cwd);
    match location_rules(&LocationStore::beside(state_dir), &key) {
        Ok(rules) => state.live.add(RuleScope::Location, &rules),
        Err(e) => tracing::warn!(error = %e, "the location's approvals were not applied"),
    }
}

/// `{sessionId, locationKey, approval}`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AddToolApprovalParams {
    session_id: String,
    location_key: String,
    approval: Value,
}

/// `locations.addToolApproval`: persisted for the location and live in this session.
pub(crate) fn locations_add_tool_approval(
    ctx: &Ctx<'_>,
    p: AddToolApprovalParams,
) -> Result<Value, RpcError> {
    let state = state(ctx, &p.session_id)?;
    persist_location_approval(ctx, &p.location_key, &p.approval).map_err(|e| match e {
        PersistError::Params(e) => e,
        PersistError::Store(e) => failed("locations.addToolApproval", e),
    })?;
    state
        .live
        .add(RuleScope::Location, &rules_of_approval(&p.approval));
    Ok(success())
}

/// Why an approval was not persisted.
#[derive(Debug)]
pub(crate) enum PersistError {
    /// The approval or the key is not one.
    Params(RpcError),
    /// The store could not be read or written.
    Store(location_store::StoreError),
}

impl std::fmt::Display for PersistError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PersistError::Params(e) => write!(f, "{}", e.message),
            PersistError::Store(e) => write!(f, "{e}"),
        }
    }
}

/// Persists an approval for a location; an approval of no known kind is refused.
pub(crate) fn persist_location_approval(
    ctx: &Ctx<'_>,
    key: &str,
    approval: &Value,
) -> Result<(), PersistError> {
    if rules_of_approval(approval).is_empty() {
        return Err(PersistError::Params(RpcError::invalid_params(
            "invalid params: approval: not a tool approval (kind commands with commandIdentifiers, read, write, memory, custom-tool with toolName, mcp with serverName)",
        )));
    }
    if key.is_empty() {
        return Err(PersistError::Params(RpcError::invalid_params(
            "invalid params: locationKey is empty",
        )));
    }
    store(ctx).add(key, approval).map_err(PersistError::Store)
}

fn trust(ctx: &Ctx<'_>) -> FolderTrust {
    FolderTrust::beside(ctx.server.config().state_root.dir())
}

/// `folderTrust.isTrusted`.
pub(crate) fn folder_is_trusted(ctx: &Ctx<'_>, p: PathParams) -> Result<Value, RpcError> {
    state(ctx, &p.session_id)?;
    let trusted = trust(ctx)
        .is_trusted(Path::new(&p.path))
        .map_err(|e| failed("folderTrust.isTrusted", e))?;
    Ok(json!({ "trusted": trusted }))
}

/// `folderTrust.addTrusted`.
pub(crate) fn folder_add_trusted(ctx: &Ctx<'_>, p: PathParams) -> Result<Value, RpcError> {
    state(ctx, &p.session_id)?;
    trust(ctx)
        .add(Path::new(&p.path))
        .map_err(|e| failed("folderTrust.addTrusted", e))?;
    Ok(success())
}
