//! The journal's seal on disk: `events.jsonl.seal` beside the journal, kept by its writer and
//! by repairs (the chain and its records are `turnstile-seal`'s; this file only opens, reads
//! and appends the seal inside the session directory, never through a link).
//!
//! A seal is evidence: nothing here rewrites one. A seal that cannot be read as a seal, or
//! that covers more of the journal than the journal holds, is left as it is and the writer
//! goes on unsealed (with a warning), so `turnstile verify` still shows what happened. A
//! failure to write the seal never stops the journal either: the journal is the session, the
//! seal only its witness.

use std::fs::File;
use std::io::{self, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use turnstile_seal::{
    Coverage, LineDigest, LineHasher, Record, Removed, Repair, RepairAction, SealKey, SealState,
    Sealer,
};

use crate::layout_error::LayoutError;
use crate::session_dir::{Access, SessionDir};
use crate::sink::JournalSink;
use crate::timestamp::Timestamp;

/// The seal of journal `name` (`events.jsonl.seal`).
pub fn seal_name(journal: &str) -> String {
    format!("{journal}.seal")
}

/// The seal beside a journal path.
pub fn seal_path(journal: &Path) -> PathBuf {
    let mut name = journal.as_os_str().to_owned();
    name.push(".seal");
    PathBuf::from(name)
}

/// The variable naming the key file a writer and a repair sign the seal with.
pub const SEAL_KEY_ENV: &str = "TURNSTILE_SEAL_KEY";

/// Whether and how a writer seals its journal.
#[derive(Debug, Clone, Default)]
pub enum Sealing {
    /// Sealed, signed with the key in `TURNSTILE_SEAL_KEY` when it is set.
    #[default]
    Sealed,
    /// Sealed and signed with this key.
    SignedWith(Arc<SealKey>),
    /// No seal is begun or continued (benchmarks; a seal already there is left as it is).
    Off,
}

/// Why a seal key could not be had.
#[derive(Debug, thiserror::Error)]
#[error("{SEAL_KEY_ENV}={}: {source}; unset it to seal without signing", path.display())]
pub struct SealKeyError {
    /// The key file named.
    pub path: PathBuf,
    /// What is wrong with it.
    pub source: turnstile_seal::SealError,
}

/// The key `TURNSTILE_SEAL_KEY` names, if it is set.
pub fn key_from_env() -> Result<Option<SealKey>, SealKeyError> {
    let Some(path) = std::env::var_os(SEAL_KEY_ENV).filter(|p| !p.is_empty()) else {
        return Ok(None);
    };
    let path = PathBuf::from(path);
    SealKey::from_file(&path)
        .map(Some)
        .map_err(|source| SealKeyError { path, source })
}

impl Sealing {
    /// The key to sign with, `None` for no seal at all.
    pub(crate) fn key(&self) -> Result<Option<Option<SealKey>>, SealKeyError> {
        match self {
            Sealing::Sealed => key_from_env().map(Some),
            Sealing::SignedWith(key) => Ok(Some(Some(SealKey::clone(key)))),
            Sealing::Off => Ok(None),
        }
    }
}

/// A writer's open seal: the chain kept in step with its appends.
#[derive(Debug)]
pub(crate) struct SealWriter {
    sealer: Sealer,
    file: File,
    path: PathBuf,
    /// The journal's replica, which keeps every record written here too (a remote store's
    /// seal: `docs/stores.md`).
    sink: Option<Arc<dyn JournalSink>>,
}

/// The seal read back with the file it came from, positioned at its end.
struct Opened {
    file: File,
    state: Option<SealState>,
}

fn open_seal(dir: &SessionDir, journal: &str, create: bool) -> Result<Option<Opened>, String> {
    let name = seal_name(journal);
    let path = dir.join(&name);
    let exists = dir.stat(&name).map_err(|e| e.to_string())?.is_some();
    if !exists && !create {
        return Ok(None);
    }
    let mut file = dir
        .open_file(&name, Access::CreateReadWrite)
        .map_err(|e| e.to_string())?;
    let mut text = BufReader::new(&mut file);
    let state = match SealState::load(&mut text) {
        Ok(state) => state,
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    let state = if state.records.is_empty() {
        None
    } else {
        Some(state)
    };
    if let Some(st) = &state
        && st.torn_bytes > 0
    {
        // The last record's write was cut short (a crash before the seal reached the disk):
        // a partial record is no record, and the next one must start on a line of its own.
        file.set_len(st.whole_bytes)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        tracing::warn!(seal = %path.display(), bytes = st.torn_bytes, "cut a torn last record from the seal");
    }
    file.seek(SeekFrom::End(0))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(Some(Opened { file, state }))
}

impl SealWriter {
    /// Opens (or begins) the seal of journal `name`, which is `journal_bytes` long, for a
    /// writer; lines past what the seal covers are adopted (hashed and checkpointed as such).
    /// `None` (with a warning) when the seal cannot be continued (see the module doc).
    /// With a `sink`, every record written goes to it too.
    pub(crate) fn open(
        dir: &SessionDir,
        name: &str,
        journal_bytes: u64,
        key: Option<SealKey>,
        sink: Option<Arc<dyn JournalSink>>,
    ) -> Option<Self> {
        let path = dir.join(&seal_name(name));
        match Self::try_open(dir, name, journal_bytes, key, sink) {
            Ok(seal) => Some(seal),
            Err(reason) => {
                tracing::warn!(seal = %path.display(), %reason, "the journal is written unsealed; `turnstile verify` shows the seal as it is");
                None
            }
        }
    }

    fn try_open(
        dir: &SessionDir,
        name: &str,
        journal_bytes: u64,
        key: Option<SealKey>,
        sink: Option<Arc<dyn JournalSink>>,
    ) -> Result<Self, String> {
        let path = dir.join(&seal_name(name));
        let Some(Opened { file, state }) = open_seal(dir, name, true)? else {
            return Err("no seal".into());
        };
        let mut seal = SealWriter {
            sealer: Sealer::begin(key.clone()),
            file,
            path,
            sink,
        };
        match state {
            None => {
                let begin = seal.sealer.begin_record();
                seal.write(&begin).map_err(|e| e.to_string())?;
            }
            Some(state) => {
                if state.coverage.bytes > journal_bytes {
                    return Err(format!(
                        "the seal covers {} bytes of the journal, which holds {journal_bytes}: sealed lines are gone",
                        state.coverage.bytes
                    ));
                }
                seal.sealer = Sealer::resume(state.coverage, state.format, key);
            }
        }
        let from = seal.sealer.coverage().bytes;
        if from < journal_bytes {
            // Lines no checkpoint covers: a journal from before seals, or lines a writer
            // appended after its last checkpoint before it stopped. Sealed now, marked adopted.
            let journal = dir
                .open_file(name, Access::Read)
                .map_err(|e| e.to_string())?;
            let mut journal = BufReader::with_capacity(1 << 16, journal);
            journal
                .seek(SeekFrom::Start(from))
                .map_err(|e| e.to_string())?;
            let mut lines = LineHasher::new(journal.take(journal_bytes - from), from);
            while let Some(line) = lines.next_line().map_err(|e| e.to_string())? {
                seal.sealer.push(&line.digest, line.len);
            }
            if let Some(record) = seal.sealer.checkpoint(true) {
                seal.write(&record).map_err(|e| e.to_string())?;
            }
        }
        Ok(seal)
    }

    /// Takes in one appended line.
    pub(crate) fn push(&mut self, digest: &LineDigest, len: u64) {
        self.sealer.push(digest, len);
    }

    /// Appends a checkpoint of the lines pushed since the last one (not fsynced: a crash
    /// leaves the page cache to the kernel, and a power loss at worst leaves lines the next
    /// writer adopts). `false` when the seal could not be written (sealing stops).
    pub(crate) fn checkpoint(&mut self) -> bool {
        let Some(record) = self.sealer.checkpoint(false) else {
            return true;
        };
        match self.write(&record) {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!(seal = %self.path.display(), error = %e, "the seal could not be written; the journal goes on unsealed");
                false
            }
        }
    }

    /// The last checkpoint and an fsync of the seal (a writer closing).
    pub(crate) fn close(&mut self) {
        if self.checkpoint()
            && let Err(e) = self.file.sync_all()
        {
            tracing::warn!(seal = %self.path.display(), error = %e, "the seal could not be synced");
        }
    }

    fn write(&mut self, record: &[u8]) -> io::Result<()> {
        self.file.write_all(record)?;
        if let Some(sink) = &self.sink {
            // A replica that refuses (another writer, a lost lease) refuses the journal's next
            // line too; the seal stops here rather than go on without it.
            sink.seal(record).map_err(io::Error::other)?;
        }
        Ok(())
    }
}

/// A line of the journal a repair took out.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TakenLine {
    /// 1-based line of the journal before the repair.
    pub(crate) line: u64,
    /// Its byte offset before the repair.
    pub(crate) offset: u64,
    /// Its length, `\n` included.
    pub(crate) len: u64,
    /// Its sha256.
    pub(crate) digest: LineDigest,
}

/// Records a repair of journal `name` in its seal, if it has one. `removed` are the journal's
/// lines the repair took out, in order;
/// `side_file` is where they went. Called after the repair is on disk.
pub(crate) fn record_repair(
    dir: &SessionDir,
    name: &str,
    action: RepairAction,
    removed: &[TakenLine],
    unterminated_bytes: u64,
    side_file: Option<&Path>,
) -> Result<(), LayoutError> {
    let path = dir.join(&seal_name(name));
    let io_err = |source: io::Error| LayoutError::Io {
        path: path.clone(),
        source,
    };
    let opened = match open_seal(dir, name, false) {
        Ok(Some(opened)) => opened,
        Ok(None) => return Ok(()),
        Err(reason) => {
            tracing::warn!(seal = %path.display(), %reason, "the repair is not recorded in the seal, which is left as it is");
            return Ok(());
        }
    };
    let Opened {
        mut file,
        state: Some(state),
    } = opened
    else {
        return Ok(());
    };
    let key = key_from_env()
        .map_err(|e| io_err(io::Error::new(io::ErrorKind::InvalidInput, e.to_string())))?;
    let record = repair_record(&state, action, removed, unterminated_bytes, side_file);
    let line = Sealer::resume(state.coverage, state.format, key).sign(Record::Repair(record));
    file.write_all(&line).map_err(io_err)?;
    file.sync_all().map_err(io_err)?;
    Ok(())
}

fn repair_record(
    state: &SealState,
    action: RepairAction,
    removed: &[TakenLine],
    unterminated_bytes: u64,
    side_file: Option<&Path>,
) -> Repair {
    let Coverage { lines, bytes, .. } = state.coverage;
    let mut record = Repair {
        action,
        at: Timestamp::now().to_text(),
        removed: Vec::new(),
        unsealed_lines: 0,
        unsealed_bytes: unterminated_bytes,
        lines,
        bytes,
        side_file: side_file
            .and_then(|p| p.file_name())
            .map(|n| n.to_string_lossy().into_owned()),
        key: None,
        sig: None,
    };
    for &TakenLine {
        line,
        offset,
        len,
        digest,
    } in removed
    {
        if line <= lines && offset + len <= bytes {
            record.removed.push(Removed {
                sealed: state.sealed_position(line),
                sha256: digest.to_hex(),
            });
            record.lines -= 1;
            record.bytes -= len;
        } else {
            record.unsealed_lines += 1;
            record.unsealed_bytes += len;
        }
    }
    record
}

/// The lines of journal `name` from byte `from` to its end, as [`record_repair`] takes them
/// (a last line without its `\n` is counted in bytes only).
pub(crate) fn lines_from(
    dir: &SessionDir,
    name: &str,
    from: u64,
    first_line: u64,
) -> io::Result<(Vec<TakenLine>, u64)> {
    let mut journal = dir
        .open_file(name, Access::Read)
        .map_err(io::Error::other)?;
    journal.seek(SeekFrom::Start(from))?;
    let mut lines = LineHasher::new(BufReader::with_capacity(1 << 16, journal), from);
    let mut out = Vec::new();
    let mut unterminated = 0;
    while let Some(line) = lines.next_line()? {
        if line.terminated {
            out.push(TakenLine {
                line: first_line + out.len() as u64,
                offset: line.offset,
                len: line.len,
                digest: line.digest,
            });
        } else {
            unterminated = line.len;
        }
    }
    Ok((out, unterminated))
}
