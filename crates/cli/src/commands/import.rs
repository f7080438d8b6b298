//! `turnstile import`: an `events.jsonl` into a store as a session, refusing one the store
//! already holds with other bytes.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use turnstile_journal::payload::SessionStart;
use turnstile_journal::{Event, StateRoot, Uuid};
use turnstile_store::{FileStore, Imported, JournalStore};

use crate::store::StoreArgs;

/// `turnstile import` arguments.
#[derive(Debug, Clone, Args)]
pub struct ImportArgs {
    /// The journal (an events.jsonl).
    pub file: PathBuf,
    /// The session id [default: the sessionId of its session.start].
    #[arg(long, value_name = "UUID")]
    pub session_id: Option<String>,
    /// The store to write: `nats://HOST:PORT` or a state directory [default: --store, else the state directory]
    #[arg(long, value_name = "STORE")]
    pub into: Option<String>,
}

/// The id a journal names in its first event.
fn id_of(file: &Path, bytes: &[u8]) -> Result<Uuid> {
    let first = bytes.split(|&b| b == b'\n').next().unwrap_or_default();
    let start = Event::from_line(first)
        .ok()
        .and_then(|e| e.payload::<SessionStart>().ok())
        .with_context(|| {
            format!(
                "{}:1: not a session.start event; give the session id with --session-id",
                file.display()
            )
        })?;
    turnstile_journal::parse_session_id(&start.session_id)
        .with_context(|| format!("{}:1: sessionId", file.display()))
}

/// Runs `turnstile import`.
pub fn run(args: &ImportArgs, store: &StoreArgs, state_dir: Option<&Path>) -> Result<ExitCode> {
    let bytes = std::fs::read(&args.file)
        .with_context(|| format!("cannot read {}", args.file.display()))?;
    let id = match &args.session_id {
        Some(id) => crate::store::session_id(id)?,
        None => id_of(&args.file, &bytes)?,
    };
    let into = args.into.clone().or_else(|| store.store.clone());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let imported = runtime.block_on(async {
        match into.as_deref() {
            Some(url) if turnstile_store_nats::is_nats_url(url) => {
                let nats = crate::store::open_nats(store.nats_config(url)?).await?;
                anyhow::Ok(nats.import(id, &bytes).await?)
            }
            other => {
                let root = StateRoot::resolve(other.map(Path::new).or(state_dir))?;
                Ok(FileStore::new(root).import(id, &bytes).await?)
            }
        }
    })?;
    match imported {
        Imported::Created => eprintln!("imported session {id}"),
        Imported::AlreadyPresent => eprintln!("session {id} is already there with the same bytes"),
    }
    Ok(ExitCode::SUCCESS)
}
