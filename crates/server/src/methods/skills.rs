//! `session.skills.*`: the session's skills (`skillDirectories`) as the Copilot CLI serves
//! them: listed, turned on and off, read again from their directories, and the ones the model
//! loaded.
//!
//! The set is the loop's (`SessionHandle::skills`), so a toggle or a reload shows in the next
//! request: the `skill` tool answers from it and the system prompt recorded before the next
//! prompt (`system.message`) lists the enabled skills, which is where the runtime's journal
//! keeps a toggle too. Like the runtime, each change is announced as an ephemeral
//! `session.skills_loaded`, and a resume takes `disabledSkills` from its own params.

use serde::Deserialize;
use serde_json::{Value, json};
use turnstile_journal::payload::{SessionSkillsLoaded, SkillInvoked};
use turnstile_journal::{JournalReader, ReadError, ReadMode};
use turnstile_loop::SessionHandle;
use turnstile_tools::skills::SkillWarning;

use super::session_id_params::SessionIdParams;
use super::{Ctx, open_session};
use crate::rpc::{RpcError, codes};

/// The most invoked skills `getInvoked` answers with (the latest are kept).
pub(crate) const MAX_INVOKED_LISTED: usize = 256;

/// `session.skills.enable` / `disable` params.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct ToggleParams {
    session_id: String,
    name: String,
}

/// `session.skills.list`: every skill, enabled or not, in the runtime's `Skill` shape.
pub(crate) fn list(ctx: &Ctx<'_>, params: SessionIdParams) -> Result<Value, RpcError> {
    let session = open_session(ctx, params.id())?;
    let skills = session.handle().skills().summaries();
    Ok(json!({ "skills": skills }))
}

/// `session.skills.enable`: the skill `name` is offered from the next request on (a name no
/// skill has is remembered for a reload, as the runtime does).
pub(crate) fn enable(ctx: &Ctx<'_>, params: ToggleParams) -> Result<Value, RpcError> {
    toggle(ctx, params, true)
}

/// `session.skills.disable`: the skill `name` is no longer offered.
pub(crate) fn disable(ctx: &Ctx<'_>, params: ToggleParams) -> Result<Value, RpcError> {
    toggle(ctx, params, false)
}

fn toggle(ctx: &Ctx<'_>, params: ToggleParams, enabled: bool) -> Result<Value, RpcError> {
    let session = open_session(ctx, &params.session_id)?;
    let handle = session.handle();
    handle
        .skills()
        .set_enabled(&params.name, enabled)
        .map_err(|e| RpcError::invalid_params(e.to_string()))?;
    announce(handle);
    Ok(Value::Null)
}

/// `session.skills.reload`: the directories read again, toggles kept; the files that could
/// not be used as the runtime's `SkillsLoadDiagnostics` (`errors`: a skill file that is not
/// one; `warnings`: the rest, such as a name taken twice or a directory that cannot be read).
pub(crate) fn reload(ctx: &Ctx<'_>, params: SessionIdParams) -> Result<Value, RpcError> {
    let session = open_session(ctx, params.id())?;
    let handle = session.handle();
    let (errors, warnings): (Vec<SkillWarning>, Vec<SkillWarning>) = handle
        .skills()
        .reload()
        .into_iter()
        .partition(|w| w.path.ends_with("SKILL.md") && !w.reason.contains("already loaded"));
    announce(handle);
    let text = |list: Vec<SkillWarning>| -> Vec<String> {
        list.into_iter()
            .map(|w| format!("{}: {}", w.path.display(), w.reason))
            .collect()
    };
    Ok(json!({ "warnings": text(warnings), "errors": text(errors) }))
}

/// `session.skills.ensureLoaded`: turnstile reads the directories when the session opens, so
/// they are loaded; answered as the runtime answers.
pub(crate) fn ensure_loaded(ctx: &Ctx<'_>, params: SessionIdParams) -> Result<Value, RpcError> {
    open_session(ctx, params.id())?;
    Ok(json!({}))
}

/// `session.skills.getInvoked`: the skills the main agent loaded, from the journal's
/// `skill.invoked` events, each with its body and `invokedAtTurn`, the number of messages of
/// the conversation before it (user, assistant and tool results), as the runtime counts.
pub(crate) fn get_invoked(ctx: &Ctx<'_>, params: SessionIdParams) -> Result<Value, RpcError> {
    let session = open_session(ctx, params.id())?;
    let path = ctx
        .server
        .config()
        .state_root
        .session(session.handle().id())
        .events;
    let failed = |e: ReadError| RpcError::new(codes::SESSION_FAILED, e.to_string());
    // A session that has recorded nothing yet has no journal file: nothing was invoked.
    if !path.is_file() {
        return Ok(json!({ "skills": [] }));
    }
    let reader = JournalReader::open(&path, ReadMode::Lenient).map_err(failed)?;
    let mut messages = 0u64;
    let mut invoked: std::collections::VecDeque<Value> = std::collections::VecDeque::new();
    // One line at a time: memory follows the skills listed, not the journal.
    for record in reader {
        let event = match record {
            Ok(record) => record.event,
            // The line being written right now.
            Err(ReadError::TornTail { .. }) => break,
            Err(e) => return Err(failed(e)),
        };
        if event.agent_id.is_some() {
            continue;
        }
        match event.event_type.as_str() {
            "user.message" | "assistant.message" | "tool.execution_complete" => messages += 1,
            "skill.invoked" => {
                let Ok(skill) = event.payload::<SkillInvoked>() else {
                    continue;
                };
                if invoked.len() == MAX_INVOKED_LISTED {
                    invoked.pop_front();
                }
                invoked.push_back(json!({
                    "name": skill.name,
                    "path": skill.path,
                    "content": skill.content,
                    "invokedAtTurn": messages,
                }));
            }
            _ => {}
        }
    }
    Ok(json!({ "skills": Vec::from(invoked) }))
}

/// The skills as they are now, to the session's clients (the runtime's notice of a change).
fn announce(handle: &SessionHandle) {
    handle.announce(&SessionSkillsLoaded {
        skills: handle.skills().summaries(),
    });
}
