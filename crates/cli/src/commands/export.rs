//! `turnstile export`: a session's journal out of a store, byte for byte as `events.jsonl`,
//! in bounded memory (or, with `--otlp`, as traces: `export_otlp.rs`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use turnstile_journal::lines::MAX_LINE_BYTES_ENV;
use turnstile_journal::seal_file::seal_path;
use turnstile_journal::session_dir::open_read_nofollow;
use turnstile_journal::{StateRoot, max_line_bytes};
use turnstile_store::journal_stream::PIECE_BYTES;
use turnstile_store::{Exported, FileStore, JournalStore};

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
    /// Write to this file instead of stdout (and the journal's seal, if it has one, to
    /// FILE.seal).
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Send the session as OpenTelemetry GenAI traces (OTLP/HTTP protobuf) to this receiver
    /// instead: a URL without a path gets /v1/traces; bare, the OTEL_EXPORTER_OTLP_* variables
    /// decide [default: http://localhost:4318/v1/traces]. Message contents only with
    /// OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true.
    #[arg(long, value_name = "URL", num_args = 0..=1, default_missing_value = "", conflicts_with = "output")]
    pub otlp: Option<String>,
}

/// Runs `turnstile export`: the journal goes out in bounded pieces, to stdout or to
/// `--output` (removed again when the export fails). A line longer than the readers' limit is
/// written like the others and named on stderr with its number and size, and the exit status
/// is 1: `import` and the other readers with the same limit refuse or skip it.
pub fn run(args: &ExportArgs, store: &StoreArgs, state_dir: Option<&Path>) -> Result<ExitCode> {
    if let Some(url) = &args.otlp {
        let from = args.from.as_deref();
        return super::export_otlp::run(&args.session, from, url, store, state_dir);
    }
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
    let export = |out: &mut (dyn Write + Send)| {
        runtime.block_on(async {
            let mut out = out;
            match from.as_deref() {
                Some(url) if turnstile_store_nats::is_nats_url(url) => {
                    let nats = crate::store::open_nats(store.nats_config(url)?).await?;
                    anyhow::Ok(nats.export_to(id, &mut out).await?)
                }
                other => {
                    let root = StateRoot::resolve(other.map(Path::new).or(state_dir))?;
                    Ok(FileStore::new(root).export_to(id, &mut out).await?)
                }
            }
        })
    };
    let exported = match &args.output {
        Some(path) => {
            // The seal first (a record is stored after the lines it covers), written beside
            // the journal as `FILE.seal`, where `import` and `verify` look for it.
            let seal = runtime.block_on(async {
                match from.as_deref() {
                    Some(url) if turnstile_store_nats::is_nats_url(url) => {
                        let nats = crate::store::open_nats(store.nats_config(url)?).await?;
                        anyhow::Ok(nats.seal(id).await?.bytes)
                    }
                    other => {
                        let root = StateRoot::resolve(other.map(Path::new).or(state_dir))?;
                        let seal = seal_path(&root.session(id).events);
                        match open_read_nofollow(&seal) {
                            Ok(mut file) => {
                                let mut bytes = Vec::new();
                                std::io::Read::read_to_end(&mut file, &mut bytes)
                                    .with_context(|| format!("cannot read {}", seal.display()))?;
                                Ok(bytes)
                            }
                            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
                            Err(e) => {
                                Err(e).with_context(|| format!("cannot read {}", seal.display()))
                            }
                        }
                    }
                }
            })?;
            let seal_file = seal_path(path);
            if seal.is_empty() {
                // A seal left by an earlier export would be taken for this journal's.
                let _ = std::fs::remove_file(&seal_file);
            } else {
                std::fs::write(&seal_file, &seal)
                    .with_context(|| format!("cannot write {}", seal_file.display()))?;
            }
            let file = std::fs::File::create(path)
                .with_context(|| format!("cannot write {}", path.display()))?;
            let mut out = std::io::BufWriter::with_capacity(PIECE_BYTES, file);
            let written = export(&mut out).and_then(|exported| {
                out.flush()
                    .with_context(|| format!("cannot write {}", path.display()))?;
                Ok(exported)
            });
            if written.is_err() && std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
                // A part of a journal is not kept where a whole one was asked for, nor its
                // seal without it.
                let _ = std::fs::remove_file(path);
                let _ = std::fs::remove_file(&seal_file);
            }
            written.with_context(|| {
                format!("the export to {} failed and was removed", path.display())
            })?
        }
        None => {
            let mut out = std::io::BufWriter::with_capacity(PIECE_BYTES, std::io::stdout());
            let exported = export(&mut out).context("the export to stdout failed")?;
            out.flush().context("cannot write to stdout")?;
            exported
        }
    };
    Ok(report_long_lines(&args.session, &exported))
}

/// Names on stderr the lines longer than the readers' limit; 1 when there are any.
fn report_long_lines(session: &str, exported: &Exported) -> ExitCode {
    if exported.long_total == 0 {
        return ExitCode::SUCCESS;
    }
    let max = max_line_bytes();
    for long in &exported.long {
        let unfinished = if long.terminated {
            ""
        } else {
            " (the last, with no newline)"
        };
        eprintln!(
            "warning: session {session} line {} (byte {}) is {} bytes{unfinished}, over the {max} bytes a journal line may take in memory ({MAX_LINE_BYTES_ENV}); it was exported unchanged, but `import` refuses it and the other readers skip it unless {MAX_LINE_BYTES_ENV} is set above {}",
            long.line, long.offset, long.len, long.len
        );
    }
    let unlisted = exported.long_total - exported.long.len() as u64;
    if unlisted > 0 {
        eprintln!("warning: {unlisted} more lines over the limit are not listed");
    }
    ExitCode::from(1)
}
