//! `turnstile checkpoint`: write (or `--verify`) the checkpoint sidecar of a session, so that
//! loading it later folds only the journal's tail; on the JetStream store, the checkpoint
//! entry of the stored session with its folded state (`crate::stored_checkpoint`).

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::Args;
use turnstile_journal::layout::EVENTS_FILE;
use turnstile_replay::{verify_checkpoint, write_checkpoint};
use turnstile_store::{JournalStore, journal_bytes};
use turnstile_store_nats::{NatsConfig, NatsStore, StoreCheckpoint};

use crate::store::StoredCopy;
use crate::stored_checkpoint::{Adopted, adopt, with_folded_state};

/// Arguments of `turnstile checkpoint`.
#[derive(Debug, Clone, Args)]
pub struct CheckpointArgs {
    /// A session id, a unique id prefix or a session directory.
    #[arg(default_value = "", hide_default_value = true)]
    pub target: String,
    /// The most recently updated session, instead of naming one.
    #[arg(long, conflicts_with = "target")]
    pub last: bool,
    /// Check the existing checkpoint thoroughly (CRC32C of the whole prefix and a refold)
    /// instead of writing a new one; exit 1 when it does not match the journal.
    #[arg(long)]
    pub verify: bool,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Writes or verifies the checkpoint of the target session.
pub fn run(args: &CheckpointArgs, state_root: Option<&Path>) -> Result<ExitCode> {
    let paths = crate::target::resolve(&args.target, state_root)?;
    paths.check_events_file()?;
    if paths.events.file_name().and_then(|n| n.to_str()) != Some(EVENTS_FILE)
        || paths.events.parent() != Some(paths.dir.as_path())
    {
        bail!(
            "{} is not a session's {EVENTS_FILE}: checkpoints live in session directories (give the session id or its directory)",
            paths.events.display()
        );
    }
    let dir = &paths.dir;
    if args.verify {
        let report = verify_checkpoint(dir)
            .with_context(|| format!("verifying the checkpoint of {}", dir.display()))?;
        if args.json {
            println!("{}", serde_json::to_string_pretty(&report)?);
        } else if report.is_ok() {
            println!(
                "{}: checkpoint matches the journal (guard, prefix CRC32C, refolded state)",
                dir.display()
            );
        } else {
            println!(
                "{}: checkpoint does not match: {}",
                dir.display(),
                report.problem.as_deref().unwrap_or("unknown difference")
            );
            println!(
                "fix: `turnstile checkpoint {}` writes a fresh one",
                args.target
            );
        }
        return Ok(if report.is_ok() {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        });
    }
    let info = write_checkpoint(dir)
        .with_context(|| format!("writing the checkpoint of {}", dir.display()))?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&info)?);
    } else {
        let how = match &info.load.fallback_reason {
            None => format!(
                "previous checkpoint + {} bytes of tail",
                info.load.tail_bytes
            ),
            Some(reason) => format!("whole journal folded ({reason})"),
        };
        println!(
            "wrote {}: {} events, {} bytes ({how})",
            info.path.display(),
            info.event_count,
            info.offset
        );
        if let Some(at) = info.load.torn_tail_at {
            println!("note: the last line (byte {at}) has no newline yet and is not covered");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `turnstile checkpoint ID` on the JetStream store: folds a scratch copy of the stored journal
/// and stores its folded state, the covered stream sequence and the prefix's hash as the
/// session's checkpoint entry; with `--verify`, checks the stored entry against the subject
/// (exit 1 when it does not match).
pub fn run_stored(args: &CheckpointArgs, config: NatsConfig) -> Result<ExitCode> {
    let done = crate::store::with_stored_copy(
        config,
        &args.target,
        async |copy: StoredCopy<'_>| {
            let StoredCopy {
                store,
                id,
                paths,
                synced,
            } = copy;
            if args.verify {
                return verify_stored(store, id, &paths.dir, args.json).await;
            }
            write_checkpoint(&paths.dir).with_context(|| format!("folding session {id}"))?;
            let cannot_read = || format!("cannot read {}", paths.events.display());
            let bytes = std::fs::metadata(&paths.events)
                .with_context(cannot_read)?
                .len();
            let copy = std::fs::File::open(&paths.events).with_context(cannot_read)?;
            let sha256 = journal_bytes::sha256_hex_of_prefix(copy, bytes)
                .with_context(cannot_read)?
                .with_context(|| format!("{} shrank while it was read", paths.events.display()))?;
            let plain = StoreCheckpoint {
                events: synced.events,
                bytes,
                stream_seq: synced.last_stream_seq,
                sha256,
                folded: None,
            };
            let full = with_folded_state(&paths.dir, &plain).with_context(|| {
                format!("the fold of session {id} does not cover its whole stored journal")
            })?;
            let stored = store.put_checkpoint(id, &full).await?;
            if args.json {
                println!(
                    "{}",
                    serde_json::json!({"session": id.to_string(), "stored": stored,
                    "events": full.events, "bytes": full.bytes, "streamSeq": full.stream_seq,
                    "sha256": full.sha256})
                );
            } else if !stored {
                // A writer appended while the copy was read and recorded a later entry at its close.
                println!(
                    "kept the checkpoint of {id} in {}: it covers more of the journal than the copy just read (up to stream sequence {})",
                    store.describe(),
                    full.stream_seq
                );
            } else {
                println!(
                    "stored the checkpoint of {id} in {}: {} events, {} bytes, up to stream sequence {}",
                    store.describe(),
                    full.events,
                    full.bytes,
                    full.stream_seq
                );
            }
            Ok(ExitCode::SUCCESS)
        },
    )?;
    Ok(done.value)
}

/// Checks the stored checkpoint of `id` against the scratch copy of its journal in `dir`:
/// the prefix hash, then the folded state as the reader's `--verify` checks a sidecar.
async fn verify_stored(
    store: &NatsStore,
    id: turnstile_journal::Uuid,
    dir: &Path,
    json: bool,
) -> Result<ExitCode> {
    let entry = store.checkpoint(id).await?;
    // A state the entry names but the state bucket does not give back (`checkpoint` left it out).
    let names_state = store
        .checkpoint_entry(id)
        .await?
        .is_some_and(|e| e.has_folded_state());
    let events = dir.join(EVENTS_FILE);
    let prefix_hash = |len: u64| -> Result<Option<String>> {
        let copy = std::fs::File::open(&events)
            .with_context(|| format!("cannot read {}", events.display()))?;
        journal_bytes::sha256_hex_of_prefix(copy, len)
            .with_context(|| format!("cannot read {}", events.display()))
    };
    let hash_differs = match &entry {
        Some(e) => prefix_hash(e.bytes)?.as_deref() != Some(e.sha256.as_str()),
        None => false,
    };
    let problem = match &entry {
        None => Some("no checkpoint is stored".to_owned()),
        Some(_) if hash_differs => {
            Some("its hash is not that of the stored journal's prefix it names".to_owned())
        }
        Some(e) if e.folded.is_none() && names_state => {
            Some("its folded state cannot be read back from the store's state bucket".to_owned())
        }
        Some(e) if e.folded.is_none() => None,
        Some(_) => match adopt(store, id, dir).await? {
            Adopted::FromStore(_) => {
                let report = verify_checkpoint(dir)
                    .with_context(|| format!("verifying the folded state of {id}"))?;
                (!report.is_ok()).then(|| {
                    report
                        .problem
                        .unwrap_or_else(|| "the folded state differs".to_owned())
                })
            }
            Adopted::Mismatch => {
                Some("its folded state does not cover exactly the bytes it names".to_owned())
            }
            Adopted::NoneStored | Adopted::LocalKept => None,
        },
    };
    let folded = entry.as_ref().is_some_and(|e| e.folded.is_some());
    if json {
        println!(
            "{}",
            serde_json::json!({"session": id.to_string(), "ok": problem.is_none(),
                "folded": folded, "events": entry.as_ref().map(|e| e.events),
                "problem": problem})
        );
    } else {
        match &problem {
            None => println!(
                "{id}: the stored checkpoint matches the journal (prefix hash{})",
                if folded {
                    ", refolded state"
                } else {
                    "; no folded state"
                }
            ),
            Some(problem) => {
                println!("{id}: the stored checkpoint does not match: {problem}");
                println!(
                    "fix: `turnstile checkpoint {id}` with the same --store stores a fresh one"
                );
            }
        }
    }
    Ok(if problem.is_none() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
