//! `turnstile import`: an `events.jsonl` into a store as a session, refusing one the store
//! already holds with other bytes, in bounded memory.

use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use turnstile_journal::layout::EVENTS_FILE;
use turnstile_journal::payload::SessionStart;
use turnstile_journal::seal_file::{seal_name, seal_path};
use turnstile_journal::session_dir::{SessionDir, open_read_nofollow};
use turnstile_journal::{BoundedLines, Event, StateRoot, Uuid, max_line_bytes};
use turnstile_seal::MAX_SEAL_BYTES;
use turnstile_store::{FileStore, Imported, JournalStore};

use crate::store::StoreArgs;

/// `turnstile import` arguments.
#[derive(Debug, Clone, Args)]
pub struct ImportArgs {
    /// The journal (an events.jsonl); its seal, FILE.seal, is imported with it when there.
    pub file: PathBuf,
    /// The session id [default: the sessionId of its session.start].
    #[arg(long, value_name = "UUID")]
    pub session_id: Option<String>,
    /// The store to write: `nats://HOST:PORT` or a state directory [default: --store, else the state directory]
    #[arg(long, value_name = "STORE")]
    pub into: Option<String>,
}

/// The id a journal names in its first event, read from its first line (at most the readers'
/// limit of it is held; a longer first line is no `session.start` this reader can take).
fn id_of(file: &Path, journal: &mut File) -> Result<Uuid> {
    let mut lines = BoundedLines::new(BufReader::new(&mut *journal), max_line_bytes());
    let first = lines
        .next_line()
        .with_context(|| format!("cannot read {}", file.display()))?;
    let start = first
        .filter(|info| !info.oversized)
        .and_then(|_| Event::from_line(lines.bytes().trim_ascii_end()).ok())
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

/// The seal `FILE.seal` beside the journal `FILE`, if there is one (at most
/// [`MAX_SEAL_BYTES`]): imported with it, so the session verifies in the store as it did.
fn seal_beside(file: &Path) -> Result<Option<Vec<u8>>> {
    let path = seal_path(file);
    let seal = match open_read_nofollow(&path) {
        Ok(seal) => seal,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(
        &mut std::io::Read::take(seal, MAX_SEAL_BYTES + 1),
        &mut bytes,
    )
    .with_context(|| format!("cannot read {}", path.display()))?;
    if bytes.len() as u64 > MAX_SEAL_BYTES {
        anyhow::bail!(
            "{}: over {MAX_SEAL_BYTES} bytes, more than a seal reader holds",
            path.display()
        );
    }
    Ok(Some(bytes))
}

/// Runs `turnstile import`: the file is read in bounded pieces (checked, compared, copied),
/// never held whole; a line longer than the readers' limit is refused with its number and
/// size, and nothing is imported.
pub fn run(args: &ImportArgs, store: &StoreArgs, state_dir: Option<&Path>) -> Result<ExitCode> {
    let mut journal =
        File::open(&args.file).with_context(|| format!("cannot read {}", args.file.display()))?;
    let id = match &args.session_id {
        Some(id) => crate::store::session_id(id)?,
        None => id_of(&args.file, &mut journal)?,
    };
    let seal = seal_beside(&args.file)?;
    let into = args.into.clone().or_else(|| store.store.clone());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let imported = runtime
        .block_on(async {
            match into.as_deref() {
                Some(url) if turnstile_store_nats::is_nats_url(url) => {
                    let nats = crate::store::open_nats(store.nats_config(url)?).await?;
                    anyhow::Ok(
                        nats.import_sealed(id, &mut journal, seal.as_deref())
                            .await?,
                    )
                }
                other => {
                    let root = StateRoot::resolve(other.map(Path::new).or(state_dir))?;
                    let imported = FileStore::new(root.clone())
                        .import_from(id, &mut journal)
                        .await?;
                    if let (Imported::Created, Some(seal)) = (&imported, &seal) {
                        let paths = root.session(id);
                        let mut file =
                            SessionDir::open(&paths.dir)?.create_new(&seal_name(EVENTS_FILE))?;
                        std::io::Write::write_all(&mut file, seal)
                            .and_then(|()| file.sync_all())
                            .with_context(|| {
                                format!("cannot write {}", seal_path(&paths.events).display())
                            })?;
                    }
                    Ok(imported)
                }
            }
        })
        .with_context(|| format!("cannot import {}", args.file.display()))?;
    match imported {
        Imported::Created => eprintln!("imported session {id}"),
        Imported::AlreadyPresent => eprintln!("session {id} is already there with the same bytes"),
    }
    Ok(ExitCode::SUCCESS)
}
