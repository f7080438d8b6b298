//! `session.instructions.getSources`: the repository instruction files the session's prompt
//! carries, as the Copilot CLI lists them (`.github/copilot-instructions.md` as `repo-copilot`,
//! `AGENTS.md` as `model-agents-md`), read from the session's working directory as the prompt
//! reads them (each cut at the prompt's bound).

use serde_json::{Value, json};
use turnstile_home::workspace;
use turnstile_loop::prompt::{INSTRUCTION_FILES, PromptContext};

use super::session_id_params::SessionIdParams;
use super::{Ctx, open_session};
use crate::rpc::RpcError;

/// The CLI's id and type of each of [`INSTRUCTION_FILES`], in its order.
const SOURCES: [(&str, &str); 2] = [("repo-copilot", "repo"), ("model-agents-md", "model")];

/// `session.instructions.getSources`: `{sources}`, in the order they join the prompt.
pub(crate) fn get_sources(ctx: &Ctx<'_>, params: SessionIdParams) -> Result<Value, RpcError> {
    let session = open_session(ctx, params.id())?;
    let dir = ctx.server.config().state_root.session(session.id()).dir;
    // The working directory as the session last recorded it (workspace.yaml's cwd).
    let cwd = workspace::read_entries(&dir)
        .ok()
        .flatten()
        .unwrap_or_default()
        .into_iter()
        .find(|(key, _)| key == "cwd")
        .map(|(_, cwd)| std::path::PathBuf::from(cwd))
        .unwrap_or_else(|| ctx.server.config().default_cwd.clone());
    let found = PromptContext::discover(&cwd, "", Vec::new()).custom_instructions;
    let mut sources = Vec::new();
    for (file, (id, kind)) in INSTRUCTION_FILES.iter().zip(SOURCES) {
        if let Some(read) = found.iter().find(|f| f.path == cwd.join(file)) {
            sources.push(json!({
                "id": id,
                "label": file,
                "sourcePath": file,
                "content": read.text,
                "type": kind,
                "location": "repository",
            }));
        }
    }
    Ok(json!({"sources": sources}))
}
