//! `turnstile export`: a session's journal out of a store, byte for byte as `events.jsonl`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use turnstile_journal::StateRoot;
use turnstile_store::{FileStore, JournalStore};

use crate::store::StoreArgs;

/// `turnstile export` arguments.
#[derive(Debug, Clone, Args)]
pub struct ExportArgs {
    /// The session id.
    #[arg(default_value = "", hide_default_value = true)]
    pub session: String,
    /// The most recently updated session, instead of naming one.
    #[arg(long, conflicts_with = "session")]
    pub last: bool,
    /// The store to read: `nats://HOST:PORT` or a state directory [default: --store, else the state directory]
    #[arg(long, value_name = "STORE")]
    pub from: Option<String>,
    /// Write to this file instead of stdout.
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// Runs `turnstile export`.
pub fn run(args: &ExportArgs, store: &StoreArgs, state_dir: Option<&Path>) -> Result<ExitCode> {
    let from = args.from.clone().or_else(|| store.store.clone());
    let id = match from.as_deref() {
        Some(url) if turnstile_store_nats::is_nats_url(url) => {
            crate::store::session_id(&args.session)?
        }
        // A state directory: an id prefix names a session as everywhere else.
        other => crate::target::resolve(&args.session, other.map(Path::new).or(state_dir))?
            .id
            .with_context(|| format!("{} is not a session of the state directory", args.session))?,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let bytes = runtime.block_on(async {
        match from.as_deref() {
            Some(url) if turnstile_store_nats::is_nats_url(url) => {
                let nats = crate::store::open_nats(store.nats_config(url)?).await?;
                anyhow::Ok(nats.export(id).await?)
            }
            other => {
                let root = StateRoot::resolve(other.map(Path::new).or(state_dir))?;
                Ok(FileStore::new(root).export(id).await?)
            }
        }
    })?;
    match &args.output {
        Some(path) => std::fs::write(path, &bytes)
            .with_context(|| format!("cannot write {}", path.display()))?,
        None => {
            let mut out = std::io::stdout().lock();
            out.write_all(&bytes)
                .and_then(|()| out.flush())
                .context("cannot write to stdout")?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
