//! The checkpoint sidecar: the folded state up to a byte offset, so loading a session costs the
//! tail of its journal, not the whole file.
//!
//! `checkpoint.json` next to `events.jsonl` holds the state, the offset (a line boundary), the
//! event count, the id of the line before the offset, a format version, the CRC32C of the whole
//! prefix, and a cheap guard: the CRC32C of the last 64 KiB before the offset and the journal's
//! identity (device, inode).
//!
//! Loading trusts the checkpoint when the version matches, the journal is the same file and at
//! least as long, the offset ends a line, the guard CRC matches and the line before the offset is
//! the recorded event; it then folds only the tail. Anything else means a full fold, with the
//! reason reported. The full-prefix CRC is not checked on that path: hashing a 1 GB prefix cannot
//! fit the 50 ms budget (about 100 ms just to read it from the page cache). Appending never
//! rewrites the prefix, so what can go wrong is replacement (identity), truncation (size,
//! boundary, guard, last id) or repair (truncation again). Edits in the middle of the prefix that
//! keep the file, its size and its last 64 KiB are only caught by [`verify_checkpoint`], which
//! checks the full CRC and refolds the prefix. The full CRC is kept current incrementally:
//! each new checkpoint extends the previous one's CRC over the tail it folded.

use std::fs::{self, File};
use std::io::{self, Write};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use turnstile_journal::Uuid;
use turnstile_journal::layout::EVENTS_FILE;
use turnstile_journal::reader::{ReadMode, check_line};

use crate::checkpoint_rejection::CheckpointRejection;
pub use crate::checkpoint_version::CHECKPOINT_VERSION;
use crate::error::ReplayError;
use crate::fold::{Folder, fold_tail};
use crate::raw::envelope::tail_id;
use crate::state::SessionState;

/// Name of the sidecar in the session directory.
pub const CHECKPOINT_FILE: &str = "checkpoint.json";
/// Bytes before the offset covered by the guard CRC.
pub const GUARD_BYTES: u64 = 64 * 1024;

/// The sidecar's content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Checkpoint {
    /// [`CHECKPOINT_VERSION`] when written.
    pub version: u32,
    /// Bytes of the journal folded into `state` (ends right after a `\n`).
    pub offset: u64,
    /// Lines folded.
    pub event_count: u64,
    /// Id of the line right before `offset`.
    pub last_line_id: Option<Uuid>,
    /// CRC32C of the journal's bytes `[0, offset)`.
    pub prefix_crc32c: u32,
    /// CRC32C of the bytes `[guard_start, offset)`.
    pub guard_crc32c: u32,
    /// Start of the guarded range (`offset - 64 KiB`, or 0).
    pub guard_start: u64,
    /// Device of the journal file.
    pub device: u64,
    /// Inode of the journal file.
    pub inode: u64,
    /// The folded state.
    pub state: SessionState,
}

/// How a session was loaded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LoadReport {
    /// The checkpoint was valid and only the tail was folded.
    pub used_checkpoint: bool,
    /// Why the checkpoint was not used (`None` when it was), for people.
    pub fallback_reason: Option<String>,
    /// The same, as a value to match on.
    #[serde(skip)]
    pub fallback: Option<CheckpointRejection>,
    /// Bytes taken from the checkpoint.
    pub checkpoint_offset: u64,
    /// Bytes folded from the journal.
    pub tail_bytes: u64,
    /// Offset of an unterminated last line that was left out.
    pub torn_tail_at: Option<u64>,
    /// CRC32C of the journal's bytes covered by the state.
    pub prefix_crc32c: u32,
}

impl Checkpoint {
    /// The session's checkpoint if it passes the fast guard (version, file identity, length,
    /// line boundary, tail CRC, last id), else why not. A journal writer may then skip
    /// checking the prefix it covers.
    pub fn trusted(session_dir: &Path) -> Result<Checkpoint, CheckpointRejection> {
        trusted_checkpoint(
            &session_dir.join(EVENTS_FILE),
            &session_dir.join(CHECKPOINT_FILE),
        )
    }
}

impl SessionState {
    /// Loads the session in `session_dir`: from its checkpoint plus the journal's tail when the
    /// checkpoint is valid, else by folding the whole journal.
    pub fn load(session_dir: &Path) -> Result<(SessionState, LoadReport), ReplayError> {
        let trusted = Checkpoint::trusted(session_dir);
        Self::load_with(session_dir, trusted)
    }

    /// Like [`Self::load`], with the checkpoint already read by [`Checkpoint::trusted`] (so a
    /// caller that looked at it first does not parse it twice). Its guard is checked again:
    /// the journal may have changed since.
    pub fn load_with(
        session_dir: &Path,
        checkpoint: Result<Checkpoint, CheckpointRejection>,
    ) -> Result<(SessionState, LoadReport), ReplayError> {
        let events = session_dir.join(EVENTS_FILE);
        let (mut folder, mut crc, start_line, start, fallback) =
            match checkpoint.and_then(|cp| check_guard(&events, &cp).map(|()| cp)) {
                Ok(cp) => (
                    Folder::from_state(cp.state),
                    cp.prefix_crc32c,
                    cp.event_count,
                    cp.offset,
                    None,
                ),
                Err(reason) => (Folder::new(), 0, 0, 0, Some(reason)),
            };
        let file = File::open(&events).map_err(|e| ReplayError::io(&events, e))?;
        let torn_tail_at = fold_tail(
            &events,
            file,
            &mut folder,
            start_line,
            start,
            u64::MAX,
            Some(&mut crc),
        )?;
        let state = folder.into_state();
        let report = LoadReport {
            used_checkpoint: fallback.is_none(),
            fallback_reason: fallback.as_ref().map(ToString::to_string),
            fallback,
            checkpoint_offset: start,
            tail_bytes: state.byte_size - start,
            torn_tail_at,
            prefix_crc32c: crc,
        };
        Ok((state, report))
    }
}

/// What [`write_checkpoint`] wrote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckpointInfo {
    /// The sidecar.
    pub path: PathBuf,
    /// Bytes of journal it covers.
    pub offset: u64,
    /// Events it covers.
    pub event_count: u64,
    /// How the state was obtained.
    pub load: LoadReport,
}

/// Folds the session in `session_dir` (from its current checkpoint when valid) and writes a new
/// checkpoint covering every complete line, atomically.
pub fn write_checkpoint(session_dir: &Path) -> Result<CheckpointInfo, ReplayError> {
    let events = session_dir.join(EVENTS_FILE);
    let (state, load) = SessionState::load(session_dir)?;
    let file = File::open(&events).map_err(|e| ReplayError::io(&events, e))?;
    let meta = file.metadata().map_err(|e| ReplayError::io(&events, e))?;
    let offset = state.byte_size;
    let guard_start = offset.saturating_sub(GUARD_BYTES);
    let guard = read_range(&file, guard_start, offset).map_err(|e| ReplayError::io(&events, e))?;
    if ends_with_ephemeral(&guard) {
        // The writer's open moves such a line aside; a checkpoint covering it would make the
        // writer skip that repair and then refuse to append after it.
        return Err(ReplayError::CheckpointWrite {
            path: session_dir.join(CHECKPOINT_FILE),
            message: "the journal ends with an ephemeral event that another program wrote; open the session for writing first (`turnstile repair` or a resume moves it aside)".into(),
        });
    }
    let last_line_id =
        last_line_id(&file, offset, &guard).map_err(|why| ReplayError::CheckpointWrite {
            path: session_dir.join(CHECKPOINT_FILE),
            message: why.to_string(),
        })?;
    let checkpoint = Checkpoint {
        version: CHECKPOINT_VERSION,
        offset,
        event_count: state.event_count,
        last_line_id,
        prefix_crc32c: load.prefix_crc32c,
        guard_crc32c: crc32c::crc32c(&guard),
        guard_start,
        device: meta.dev(),
        inode: meta.ino(),
        state,
    };
    let path = session_dir.join(CHECKPOINT_FILE);
    write_atomically(session_dir, &path, &checkpoint)?;
    Ok(CheckpointInfo {
        path,
        offset,
        event_count: checkpoint.event_count,
        load,
    })
}

/// Installs `checkpoint`, written for the same journal bytes in another file (a copy made on
/// another host from a store), as the sidecar of the journal in `session_dir`: the file
/// identity becomes this journal's, everything else is kept, so the load's own checks (size,
/// line boundary, guard CRC, last line id) still decide whether it is used.
pub fn adopt_checkpoint(session_dir: &Path, mut checkpoint: Checkpoint) -> Result<(), ReplayError> {
    let events = session_dir.join(EVENTS_FILE);
    let meta = fs::symlink_metadata(&events).map_err(|e| ReplayError::io(&events, e))?;
    checkpoint.device = meta.dev();
    checkpoint.inode = meta.ino();
    write_atomically(session_dir, &session_dir.join(CHECKPOINT_FILE), &checkpoint)
}

/// Result of [`verify_checkpoint`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VerifyReport {
    /// The fast checks `load` makes passed.
    pub guard_ok: bool,
    /// The CRC32C of the whole prefix matches.
    pub prefix_crc_ok: bool,
    /// Refolding the prefix gives the stored state.
    pub state_ok: bool,
    /// What failed first, if anything.
    pub problem: Option<String>,
}

impl VerifyReport {
    /// Everything matched.
    pub fn is_ok(&self) -> bool {
        self.guard_ok && self.prefix_crc_ok && self.state_ok
    }
}

/// Checks a checkpoint thoroughly: the fast guard, the CRC32C of the whole prefix, and a refold
/// of the prefix compared with the stored state. Costs a full read of the prefix.
pub fn verify_checkpoint(session_dir: &Path) -> Result<VerifyReport, ReplayError> {
    let events = session_dir.join(EVENTS_FILE);
    let path = session_dir.join(CHECKPOINT_FILE);
    let cp = match read_checkpoint(&path) {
        Ok(cp) => cp,
        Err(problem) => {
            return Ok(VerifyReport {
                guard_ok: false,
                prefix_crc_ok: false,
                state_ok: false,
                problem: Some(problem.to_string()),
            });
        }
    };
    let guard = check_guard(&events, &cp).err().map(|why| why.to_string());
    let file = File::open(&events).map_err(|e| ReplayError::io(&events, e))?;
    let size = file
        .metadata()
        .map_err(|e| ReplayError::io(&events, e))?
        .len();
    let mut folder = Folder::new();
    let mut crc = 0u32;
    let (prefix_crc_ok, state_ok, problem) = if size < cp.offset {
        (
            false,
            false,
            Some(format!(
                "the journal ({size} bytes) is shorter than the checkpoint's offset ({})",
                cp.offset
            )),
        )
    } else {
        match fold_tail(&events, file, &mut folder, 0, 0, cp.offset, Some(&mut crc)) {
            Ok(_) => {
                let crc_ok = crc == cp.prefix_crc32c && folder.state().byte_size == cp.offset;
                let state_ok = *folder.state() == cp.state;
                let problem = if !crc_ok {
                    Some(format!(
                        "CRC32C of the prefix is {crc:08x}, the checkpoint says {:08x}",
                        cp.prefix_crc32c
                    ))
                } else if !state_ok {
                    Some("refolding the prefix gives another state".to_owned())
                } else {
                    None
                };
                (crc_ok, state_ok, problem)
            }
            Err(e) => (
                false,
                false,
                Some(format!("refolding the prefix failed: {e}")),
            ),
        }
    };
    Ok(VerifyReport {
        guard_ok: guard.is_none(),
        prefix_crc_ok,
        state_ok,
        problem: guard.or(problem),
    })
}

fn read_checkpoint(path: &Path) -> Result<Checkpoint, CheckpointRejection> {
    let bytes = match fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(CheckpointRejection::Missing),
        Err(e) => return Err(unreadable(path, &e)),
    };
    // Read the version first, so a future format is reported as such rather than as garbage.
    #[derive(Deserialize)]
    struct Version {
        version: u32,
    }
    match serde_json::from_slice::<Version>(&bytes) {
        Ok(v) if v.version != CHECKPOINT_VERSION => {
            return Err(CheckpointRejection::OtherVersion { found: v.version });
        }
        Ok(_) => {}
        Err(e) => return Err(CheckpointRejection::Invalid(e.to_string())),
    }
    serde_json::from_slice(&bytes).map_err(|e| CheckpointRejection::Invalid(e.to_string()))
}

fn unreadable(path: &Path, e: &io::Error) -> CheckpointRejection {
    CheckpointRejection::Unreadable {
        path: path.to_path_buf(),
        message: e.to_string(),
    }
}

/// The checkpoint, if `load` may trust it; else why not.
fn trusted_checkpoint(events: &Path, path: &Path) -> Result<Checkpoint, CheckpointRejection> {
    let cp = read_checkpoint(path)?;
    check_guard(events, &cp)?;
    Ok(cp)
}

/// The fast checks (no full read).
fn check_guard(events: &Path, cp: &Checkpoint) -> Result<(), CheckpointRejection> {
    if cp.state.byte_size != cp.offset || cp.state.event_count != cp.event_count {
        return Err(CheckpointRejection::Inconsistent(
            "its state does not cover its offset",
        ));
    }
    let file = File::open(events).map_err(|e| unreadable(events, &e))?;
    let meta = file.metadata().map_err(|e| unreadable(events, &e))?;
    if meta.dev() != cp.device || meta.ino() != cp.inode {
        return Err(CheckpointRejection::Replaced);
    }
    if meta.len() < cp.offset {
        return Err(CheckpointRejection::Truncated {
            size: meta.len(),
            offset: cp.offset,
        });
    }
    if cp.guard_start != cp.offset.saturating_sub(GUARD_BYTES) {
        return Err(CheckpointRejection::Inconsistent("guard range"));
    }
    let guard = read_range(&file, cp.guard_start, cp.offset).map_err(|e| unreadable(events, &e))?;
    if cp.offset > 0 && guard.last() != Some(&b'\n') {
        return Err(CheckpointRejection::NotAtLineEnd { offset: cp.offset });
    }
    if crc32c::crc32c(&guard) != cp.guard_crc32c {
        return Err(CheckpointRejection::GuardChanged);
    }
    let last = last_line_id(&file, cp.offset, &guard).map_err(|why| match why {
        LastLine::Io(e) => unreadable(events, &e),
        LastLine::NotAnEvent(message) => CheckpointRejection::LastLineNotAnEvent(message),
    })?;
    if last != cp.last_line_id {
        return Err(CheckpointRejection::LastIdChanged);
    }
    Ok(())
}

fn read_range(file: &File, from: u64, to: u64) -> io::Result<Vec<u8>> {
    let len = usize::try_from(to.saturating_sub(from)).map_err(io::Error::other)?;
    let mut buf = vec![0; len];
    file.read_exact_at(&mut buf, from)?;
    Ok(buf)
}

/// Whether the last whole line of `tail` is an event of an ephemeral type (never written by a
/// journal writer; left by another program).
fn ends_with_ephemeral(tail: &[u8]) -> bool {
    #[derive(Deserialize)]
    struct Head<'a> {
        #[serde(borrow, rename = "type")]
        kind: std::borrow::Cow<'a, str>,
    }
    let Some(body) = tail.strip_suffix(b"\n") else {
        return false;
    };
    let start = memchr::memrchr(b'\n', body).map_or(0, |i| i + 1);
    serde_json::from_slice::<Head<'_>>(&body[start..]).is_ok_and(|head| {
        turnstile_journal::persistence_of(&head.kind) == turnstile_journal::Persistence::Ephemeral
    })
}

/// Why the id of the line before an offset is unknown.
#[derive(Debug, thiserror::Error)]
enum LastLine {
    #[error(transparent)]
    Io(#[from] io::Error),
    #[error("the line before the checkpoint's offset is not an event: {0}")]
    NotAnEvent(String),
}

/// Id of the line ending at `offset`, given `tail` = the bytes just before `offset`.
fn last_line_id(file: &File, offset: u64, tail: &[u8]) -> Result<Option<Uuid>, LastLine> {
    let Some(body) = tail.strip_suffix(b"\n") else {
        return Ok(None);
    };
    let start_in_tail = memchr::memrchr(b'\n', body).map(|i| i + 1);
    if let Some(id) = tail_id(&body[start_in_tail.unwrap_or(0)..]) {
        return Ok(Some(Uuid::from_u128(id)));
    }
    // Another layout: parse the whole line (reading further back if it is longer than `tail`).
    let line = match start_in_tail {
        Some(start) => body[start..].to_vec(),
        None => {
            let end = offset - 1;
            let mut from = end - body.len() as u64;
            loop {
                let step = from.min(GUARD_BYTES);
                let chunk = read_range(file, from - step, from)?;
                if let Some(i) = memchr::memrchr(b'\n', &chunk) {
                    from = from - step + i as u64 + 1;
                    break;
                }
                from -= step;
                if from == 0 {
                    break;
                }
            }
            read_range(file, from, end)?
        }
    };
    check_line(&line, ReadMode::Lenient)
        .map(|event| Some(event.id))
        .map_err(LastLine::NotAnEvent)
}

fn write_atomically(dir: &Path, path: &Path, checkpoint: &Checkpoint) -> Result<(), ReplayError> {
    let failed = |message: String| ReplayError::CheckpointWrite {
        path: path.to_path_buf(),
        message,
    };
    // Never write through a session directory that is a link out of the state root.
    match fs::symlink_metadata(dir) {
        Ok(meta) if meta.file_type().is_symlink() => {
            return Err(failed(format!(
                "the session directory {} is a symbolic link; a checkpoint is only written into a real session directory (replace the link with the directory it points to)",
                dir.display()
            )));
        }
        Ok(_) => {}
        Err(e) => return Err(failed(e.to_string())),
    }
    turnstile_home::AtomicWrite::new(path)
        .mode(0o600)
        .write(|out| {
            serde_json::to_writer(&mut *out, checkpoint)?;
            out.write_all(b"\n")
        })
        .map_err(|e| failed(e.to_string()))
}
