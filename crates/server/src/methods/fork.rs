//! `sessions.fork`: a new session whose journal begins with the source's, as the Copilot CLI
//! forks one. The fork is a new journal written through the journal's writer (its lock, its
//! seal, the server's store), never a copied file: its `session.start` is the source's with
//! the new id and start time (the same event id, so the copied events' parent chain holds),
//! then the source's events verbatim up to the boundary, then a `session.info {infoType:
//! "fork"}` saying where it came from. The source, when open here, records the fork too.
//! Beside the journal, the fork gets its `workspace.yaml` and a copy of the source's
//! workspace files, as the CLI gives it.

use crate::remote_store::AttachMode;
use serde::Deserialize;
use serde_json::{Value, json};
use turnstile_home::git_context::GitContext;
use turnstile_home::workspace::{self, Workspace};
use turnstile_journal::{
    Event, EventType, JournalReader, JournalWriter, ReadError, ReadMode, Timestamp, Uuid,
    WriterOptions,
};

use super::lifecycle::{attach_remote, give_up_remote};
use super::workspaces::{FILES_DIR, files_under};
use super::{Ctx, session_id};
use crate::rpc::{RpcError, codes};

/// `sessions.fork` params.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ForkParams {
    session_id: String,
    /// The event the fork stops before (excluded); the whole journal when absent.
    to_event_id: Option<String>,
    /// The fork's name; the source's with ` (fork)` when absent.
    name: Option<String>,
}

fn failed(what: impl std::fmt::Display) -> RpcError {
    RpcError::new(codes::SESSION_FAILED, what.to_string())
}

/// `sessions.fork`: `{sessionId, name}` of the new session (`name` absent when neither the
/// params nor the source name one). The source may be open or closed; the fork is closed,
/// for `session.resume`.
pub(crate) async fn fork(ctx: &Ctx<'_>, params: ForkParams) -> Result<Value, RpcError> {
    let source = session_id(&params.session_id)?;
    let root = ctx.server.config().state_root.clone();
    let no_events = || {
        RpcError::new(
            codes::SESSION_NOT_FOUND,
            format!("Session {source} not found or has no persisted events"),
        )
    };
    let paths = root.session(source);
    if !paths.events.is_file() {
        return Err(no_events());
    }
    let mut events = read_journal(&paths.events)?;
    if events
        .first()
        .is_none_or(|start| start.event_type.as_str() != "session.start")
    {
        return Err(no_events());
    }
    if let Some(boundary) = params.to_event_id.as_deref() {
        let at = events
            .iter()
            .position(|event| event.id.to_string() == boundary)
            .ok_or_else(|| failed(format!("Event {boundary} not found in session {source}")))?;
        if at == 0 {
            return Err(failed(
                "Cannot fork: truncation to the specified event would result in an empty session",
            ));
        }
        events.truncate(at);
    }

    let open = ctx.server.session(source);
    let source_entries = workspace::read_entries(&paths.dir)
        .ok()
        .flatten()
        .unwrap_or_default();
    let entry = |key: &str| {
        source_entries
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
    };
    let source_name = open
        .as_ref()
        .and_then(|session| session.info().name)
        .or_else(|| entry("name"));
    let name = params
        .name
        .map(|name| name.trim().to_owned())
        .filter(|name| !name.is_empty())
        .or_else(|| source_name.as_ref().map(|name| format!("{name} (fork)")));

    let id = Uuid::new_v4();
    let now = Timestamp::now();
    let quoted = |name: &Option<String>, id: Uuid| match name {
        Some(name) => format!("\"{name}\" ({id})"),
        None => id.to_string(),
    };
    let told = format!(
        "Forked from {} as {}.",
        quoted(&source_name, source),
        quoted(&name, id)
    );
    let remote = attach_remote(ctx, id, AttachMode::Create).await?;
    let written = write_fork(ctx, id, &now, events, &told, remote.as_ref());
    give_up_remote(id, remote).await;
    written?;

    write_workspace(&root.session(id).dir, id, &now, name.as_deref(), &entry);
    copy_files(&paths.dir, &root.session(id).dir);
    if let Some(session) = open {
        let message = format!("Forked this session into {}.", quoted(&name, id));
        let data =
            serde_json::value::to_raw_value(&json!({"infoType": "fork", "message": message}))
                .map_err(failed)?;
        // The fork exists whatever becomes of this note in the source.
        if let Err(e) = session.handle().record("session.info", data).await {
            tracing::warn!(session = %source, error = %e, "the fork was not noted in its source");
        }
    }
    let mut answer = json!({"sessionId": id.to_string()});
    if let Some(name) = name {
        answer["name"] = json!(name);
    }
    Ok(answer)
}

/// The source's events in journal order, up to a torn tail (a line being written now).
fn read_journal(path: &std::path::Path) -> Result<Vec<Event>, RpcError> {
    let reader = JournalReader::open(path, ReadMode::Lenient).map_err(failed)?;
    let mut events = Vec::new();
    for record in reader {
        match record {
            Ok(record) => events.push(record.event),
            Err(ReadError::TornTail { .. }) => break,
            Err(e) => return Err(failed(e)),
        }
    }
    Ok(events)
}

/// Writes the fork's journal: the source's start made the fork's, the events, the note.
fn write_fork(
    ctx: &Ctx<'_>,
    id: Uuid,
    now: &Timestamp,
    events: Vec<Event>,
    told: &str,
    remote: Option<&std::sync::Arc<dyn crate::remote_store::RemoteSession>>,
) -> Result<(), RpcError> {
    let options = WriterOptions {
        durability: ctx.server.config().durability,
        sink: remote.and_then(|r| r.sink()),
        ..Default::default()
    };
    let (writer, _) =
        JournalWriter::create(&ctx.server.config().state_root, id, options).map_err(failed)?;
    let mut events = events.into_iter();
    let mut last = None;
    if let Some(mut start) = events.next() {
        let mut data: Value = serde_json::from_str(start.data.get()).map_err(failed)?;
        data["sessionId"] = json!(id.to_string());
        data["startTime"] = json!(now.to_text());
        start.data = serde_json::value::to_raw_value(&data).map_err(failed)?;
        start.timestamp = now.clone();
        last = Some(start.id);
        writer.append_unsynced(&start).map_err(failed)?;
    }
    for event in events {
        last = Some(event.id);
        writer.append_unsynced(&event).map_err(failed)?;
    }
    let note = serde_json::value::to_raw_value(&json!({"infoType": "fork", "message": told}))
        .map_err(failed)?;
    let note = Event::with_raw_data(EventType::new("session.info"), note, last);
    writer.append(&note).map_err(failed)?;
    writer.close().map_err(failed)
}

/// The fork's `workspace.yaml` and folders: the source's place and client, the fork's id, name
/// and dates. A failure is logged: the session depends on none of it (a resume writes it).
fn write_workspace(
    dir: &std::path::Path,
    id: Uuid,
    now: &Timestamp,
    name: Option<&str>,
    entry: &dyn Fn(&str) -> Option<String>,
) {
    let now = now.to_text();
    let file = Workspace {
        id: id.to_string(),
        cwd: entry("cwd").unwrap_or_default(),
        git: GitContext {
            git_root: entry("git_root").map(Into::into),
            repository: entry("repository"),
            host_type: entry("host_type"),
            branch: entry("branch"),
            ..Default::default()
        },
        client_name: entry("client_name").unwrap_or_else(|| "sdk".into()),
        name: name.map(str::to_owned),
        user_named: false,
        summary_count: entry("summary_count")
            .and_then(|n| n.parse().ok())
            .unwrap_or(0),
        created_at: now.clone(),
        updated_at: now,
    };
    if let Err(e) = workspace::create_session_folders(dir).and_then(|()| file.write(dir)) {
        tracing::warn!(session = %id, error = %e, "the fork's workspace.yaml was not written");
    }
}

/// Copies the source's workspace files (`files/`) into the fork's, as the Copilot CLI does:
/// regular files only, nothing followed through a link. Best effort: a file that cannot be
/// copied is logged, the fork stands.
fn copy_files(source: &std::path::Path, fork: &std::path::Path) {
    use std::os::unix::fs::DirBuilderExt;
    let from = source.join(FILES_DIR);
    let to = fork.join(FILES_DIR);
    for relative in files_under(&from) {
        let target = to.join(&relative);
        let copied = target
            .parent()
            .map_or(Ok(()), |parent| {
                std::fs::DirBuilder::new()
                    .recursive(true)
                    .mode(0o700)
                    .create(parent)
            })
            .and_then(|()| std::fs::copy(from.join(&relative), &target).map(|_| ()));
        if let Err(e) = copied {
            tracing::warn!(file = %relative, error = %e, "a workspace file was not copied to the fork");
        }
    }
}
