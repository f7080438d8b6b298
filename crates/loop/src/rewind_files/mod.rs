//! File-change tracking for rewind (`enableFileChangeTracking`), laid out in the session
//! directory as the Copilot CLI lays it out:
//!
//! ```text
//! rewind-file-snapshots/
//!   tracking.json   {"schema":1,"tracking":true}: the session captures from its first turn
//!   index.json      {"schema":1,"snapshots":[...]}: one snapshot per root user turn that
//!                   changed files, each file by the first 32 hex digits of its path's sha256
//!   backups/<sha256> preimage contents, by content hash, shared between snapshots
//!   rollback/       a restore's copies of the files it replaces, until it is done
//! ```
//!
//! A turn's snapshot starts at its `user.message` ([`FileSnapshots::begin_turn`]). Before a
//! tool call runs, each file it may change ([`write_set`]) gets its preimage kept, once per
//! turn ([`FileSnapshots::stage`]); after it, the file's postimage (hash and path) and lines
//! changed ([`FileSnapshots::record`]); a file left as it was is dropped. Every file here is
//! replaced atomically (`turnstile_home::atomic`). A preimage is kept whole only up to
//! [`MAX_FILE_BYTES`]: a larger file (or one that is not a regular file) is recorded as
//! skipped, and a rewind leaves it as it is, reporting it in `skippedFiles` as
//! `skipped-capture`. Restoring is `restore.rs`.

mod lines;
mod restore;
pub mod write_set;

use std::fs;
use std::io::{self, Read};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use sha2::{Digest, Sha256};
use turnstile_home::atomic::{AtomicWrite, AtomicWriteError};

pub use restore::{Restore, RestoreOutcome, SkipReason};

/// The directory under the session directory.
pub const DIR: &str = "rewind-file-snapshots";
const INDEX_FILE: &str = "index.json";
const TRACKING_FILE: &str = "tracking.json";
const BACKUPS_DIR: &str = "backups";
const ROLLBACK_DIR: &str = "rollback";
/// The index's format, as the runtime numbers it.
const SCHEMA: u32 = 1;

/// Largest preimage kept (10 MiB); a larger file is a skipped capture.
pub const MAX_FILE_BYTES: u64 = 10 << 20;

/// What went wrong reading or writing the snapshots.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    /// A file or directory of the store could not be read or made.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What failed.
        source: io::Error,
    },
    /// A file could not be replaced.
    #[error(transparent)]
    Write(#[from] AtomicWriteError),
    /// The index could not be written as JSON.
    #[error("cannot serialize the rewind index: {0}")]
    Json(#[from] serde_json::Error),
}

fn io_at(path: &Path) -> impl FnOnce(io::Error) -> SnapshotError + '_ {
    move |source| SnapshotError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// A path as bytes, so that a name that is not UTF-8 survives (`{"encoding":"unix-bytes"}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct EncodedPath {
    encoding: String,
    data: String,
}

impl EncodedPath {
    fn of(path: &Path) -> Self {
        EncodedPath {
            encoding: "unix-bytes".into(),
            data: hex(path.as_os_str().as_bytes()),
        }
    }
}

/// A file before the turn changed it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "kind",
    rename_all = "lowercase",
    rename_all_fields = "camelCase"
)]
pub(crate) enum Preimage {
    /// There was no file.
    Absent,
    /// Its content is `backups/<backup_file>`.
    Content {
        content_hash: String,
        backup_file: String,
        mode: u32,
        size: u64,
        resolved_path: String,
        encoded_path: EncodedPath,
    },
    /// It was not kept (too large, not a regular file, unreadable).
    Skipped { reason: String },
}

/// A file after the turn's last change to it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "kind",
    rename_all = "lowercase",
    rename_all_fields = "camelCase"
)]
pub(crate) enum Postimage {
    /// The turn removed it.
    Absent,
    /// It held content hashing to `content_hash`, at `resolved_path`.
    Content {
        content_hash: String,
        resolved_path: String,
        encoded_path: EncodedPath,
    },
    /// Not a regular file: nothing to compare a rewind against.
    Skipped { reason: String },
}

/// One file of a snapshot.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FileRecord {
    path: String,
    preimage: Preimage,
    postimage: Postimage,
    lines_added: u64,
    lines_removed: u64,
}

/// The files one root user turn changed.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Snapshot {
    snapshot_id: String,
    event_id: String,
    user_message: String,
    timestamp: String,
    /// In the order the turn first touched them.
    #[serde(serialize_with = "ser_files", deserialize_with = "de_files")]
    files: Vec<(String, FileRecord)>,
    backup_files: Vec<String>,
    file_count: u64,
    lines_added: u64,
    lines_removed: u64,
}

impl Snapshot {
    fn file_mut(&mut self, key: &str) -> Option<&mut FileRecord> {
        self.files
            .iter_mut()
            .find(|(k, _)| k == key)
            .map(|(_, f)| f)
    }

    /// The totals and backup list, from the files.
    fn sum(&mut self) {
        self.file_count = self.files.len() as u64;
        self.lines_added = self.files.iter().map(|(_, f)| f.lines_added).sum();
        self.lines_removed = self.files.iter().map(|(_, f)| f.lines_removed).sum();
        self.backup_files.clear();
        for (_, f) in &self.files {
            if let Preimage::Content { backup_file, .. } = &f.preimage
                && !self.backup_files.contains(backup_file)
            {
                self.backup_files.push(backup_file.clone());
            }
        }
    }
}

fn ser_files<S: Serializer>(files: &[(String, FileRecord)], s: S) -> Result<S::Ok, S::Error> {
    s.collect_map(files.iter().map(|(k, v)| (k, v)))
}

fn de_files<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<(String, FileRecord)>, D::Error> {
    let map = serde_json::Map::<String, Value>::deserialize(d)?;
    map.into_iter()
        .map(|(k, v)| {
            serde_json::from_value(v)
                .map(|f| (k, f))
                .map_err(D::Error::custom)
        })
        .collect()
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct Index {
    schema: u32,
    snapshots: Vec<Snapshot>,
}

/// One rewind point's file figures (`HistoryRewindPoint`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PointFiles {
    /// A file of this turn or a later one can be restored.
    pub can_restore_files: bool,
    /// Files this turn and the later ones changed.
    pub file_count: u64,
    /// This turn changed files.
    pub turn_changed_files: bool,
    /// Lines this turn added.
    pub lines_added: u64,
    /// Lines this turn removed.
    pub lines_removed: u64,
}

/// A file a rewind would restore (`HistoryRewindFilePreview`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilePreview {
    /// Its absolute path.
    pub path: String,
    /// `created`, `deleted` or `modified`, across the discarded turns.
    pub change_type: &'static str,
    /// Lines added across them.
    pub lines_added: u64,
    /// Lines removed across them.
    pub lines_removed: u64,
}

/// A session's file snapshots: the index in memory, the store on disk.
#[derive(Debug)]
pub struct FileSnapshots {
    dir: PathBuf,
    /// The working directory, absolute and normalized: nothing outside is captured or
    /// restored.
    cwd: PathBuf,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    index: Index,
    /// The event id of the turn now capturing.
    active: Option<String>,
}

impl FileSnapshots {
    /// The session's store under `session_dir`, when it tracks: it asked to (`requested`) and
    /// has no root turn yet (`fresh`), or tracked before (its `tracking.json`), as the
    /// runtime decides on resume. A session that started without tracking cannot begin
    /// later: its earlier turns' files were never captured.
    pub fn open(
        session_dir: &Path,
        cwd: &Path,
        requested: bool,
        fresh: bool,
    ) -> Result<Option<Self>, SnapshotError> {
        let dir = session_dir.join(DIR);
        let marker = dir.join(TRACKING_FILE);
        let tracked = fs::read(&marker)
            .ok()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
            .is_some_and(|v| v.get("tracking") == Some(&Value::Bool(true)));
        if !(tracked || requested && fresh) {
            return Ok(None);
        }
        fs::create_dir_all(dir.join(BACKUPS_DIR)).map_err(io_at(&dir))?;
        if !tracked {
            let text =
                serde_json::to_vec(&serde_json::json!({"schema": SCHEMA, "tracking": true}))?;
            AtomicWrite::new(&marker).write(|out| io::Write::write_all(out, &text))?;
        }
        // An index this build cannot read starts fresh, as the runtime's does.
        let index = fs::read(dir.join(INDEX_FILE))
            .ok()
            .and_then(|b| serde_json::from_slice::<Index>(&b).ok())
            .filter(|i| i.schema == SCHEMA)
            .unwrap_or(Index {
                schema: SCHEMA,
                snapshots: Vec::new(),
            });
        let cwd = std::path::absolute(cwd).unwrap_or_else(|_| cwd.to_path_buf());
        Ok(Some(FileSnapshots {
            dir,
            cwd: turnstile_tools::paths::normalize(&cwd),
            state: Mutex::new(State {
                index,
                active: None,
            }),
        }))
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Starts the snapshot of the root user turn `event_id`.
    pub fn begin_turn(&self, event_id: &str, user_message: &str, timestamp: &str) {
        let mut state = self.lock();
        // A turn that changed nothing leaves no snapshot.
        state.index.snapshots.retain(|s| !s.files.is_empty());
        state.index.snapshots.push(Snapshot {
            snapshot_id: uuid::Uuid::new_v4().to_string(),
            event_id: event_id.to_owned(),
            user_message: user_message.to_owned(),
            timestamp: timestamp.to_owned(),
            files: Vec::new(),
            backup_files: Vec::new(),
            file_count: 0,
            lines_added: 0,
            lines_removed: 0,
        });
        state.active = Some(event_id.to_owned());
    }

    /// Keeps the preimages of the files `tool` called with `args` may change, before it
    /// runs; answers those files, for [`Self::record`]. A failure is logged: the call runs
    /// either way.
    pub fn stage(&self, tool: &str, args: &Value) -> Vec<PathBuf> {
        let paths = write_set::write_set(tool, args, &self.cwd);
        if paths.is_empty() {
            return paths;
        }
        let mut state = self.lock();
        let Some(active) = state.active.clone() else {
            return Vec::new();
        };
        let Some(snapshot) = state
            .index
            .snapshots
            .iter_mut()
            .rev()
            .find(|s| s.event_id == active)
        else {
            return Vec::new();
        };
        for path in &paths {
            let key = key_of(path);
            if snapshot.file_mut(&key).is_some() {
                continue;
            }
            let preimage = self.capture(path).unwrap_or_else(|e| {
                tracing::warn!(error = %e, path = %path.display(), "rewind: failed to stage preimage");
                Preimage::Skipped {
                    reason: "unreadable".into(),
                }
            });
            let postimage = match &preimage {
                Preimage::Absent => Postimage::Absent,
                _ => postimage_of(path),
            };
            let record = FileRecord {
                path: path.display().to_string(),
                preimage,
                postimage,
                lines_added: 0,
                lines_removed: 0,
            };
            snapshot.files.push((key, record));
        }
        paths
    }

    /// Records the postimages of `paths` after the call that [`Self::stage`]d them, and
    /// saves the index.
    pub fn record(&self, paths: &[PathBuf]) {
        if paths.is_empty() {
            return;
        }
        let mut state = self.lock();
        let Some(active) = state.active.clone() else {
            return;
        };
        if let Some(snapshot) = state
            .index
            .snapshots
            .iter_mut()
            .rev()
            .find(|s| s.event_id == active)
        {
            for path in paths {
                let key = key_of(path);
                let Some(file) = snapshot.file_mut(&key) else {
                    continue;
                };
                file.postimage = postimage_of(path);
                (file.lines_added, file.lines_removed) = self.line_changes(file, path);
            }
            // A file the turn left as it found it is not a change.
            snapshot
                .files
                .retain(|(_, f)| !unchanged(&f.preimage, &f.postimage));
            snapshot.sum();
        }
        if let Err(e) = self.save(&mut state) {
            tracing::warn!(error = %e, "rewind: failed to persist captured snapshots");
        }
    }

    /// The preimage of `path` now, its content kept in `backups/` when it is a regular file
    /// within the bound.
    fn capture(&self, path: &Path) -> Result<Preimage, SnapshotError> {
        let meta = match fs::symlink_metadata(path) {
            Ok(meta) => meta,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Preimage::Absent),
            Err(e) => return Err(io_at(path)(e)),
        };
        if !meta.file_type().is_file() {
            return Ok(skipped_pre("not-a-regular-file"));
        }
        if meta.len() > MAX_FILE_BYTES {
            return Ok(skipped_pre("exceeds the size limit"));
        }
        let Some(bytes) = read_bounded(path).map_err(io_at(path))? else {
            return Ok(skipped_pre("exceeds the size limit"));
        };
        let hash = sha256_hex(&bytes);
        let backup = self.dir.join(BACKUPS_DIR).join(&hash);
        if !backup.exists() {
            AtomicWrite::new(&backup)
                .mode(0o600)
                .write(|out| io::Write::write_all(out, &bytes))?;
        }
        let resolved = resolved_path(path);
        Ok(Preimage::Content {
            content_hash: hash.clone(),
            backup_file: hash,
            mode: meta.mode(),
            size: bytes.len() as u64,
            encoded_path: EncodedPath::of(&resolved),
            resolved_path: resolved.display().to_string(),
        })
    }

    /// Lines changed from the file's preimage to what `path` holds now (zeros when either
    /// text is not at hand).
    fn line_changes(&self, file: &FileRecord, path: &Path) -> (u64, u64) {
        let before = match &file.preimage {
            Preimage::Absent => Some(Vec::new()),
            Preimage::Content { backup_file, .. } => {
                read_bounded(&self.dir.join(BACKUPS_DIR).join(backup_file))
                    .ok()
                    .flatten()
            }
            Preimage::Skipped { .. } => None,
        };
        let after = match &file.postimage {
            Postimage::Absent => Some(Vec::new()),
            Postimage::Content { .. } => read_bounded(path).ok().flatten(),
            Postimage::Skipped { .. } => None,
        };
        match (before, after) {
            (Some(b), Some(a)) => {
                lines::changes(&String::from_utf8_lossy(&b), &String::from_utf8_lossy(&a))
            }
            _ => (0, 0),
        }
    }

    /// Writes the index (the snapshots that changed files) atomically, then drops the
    /// backups no snapshot names.
    fn save(&self, state: &mut State) -> Result<(), SnapshotError> {
        let kept = Index {
            schema: SCHEMA,
            snapshots: state
                .index
                .snapshots
                .iter()
                .filter(|s| !s.files.is_empty())
                .cloned()
                .collect(),
        };
        let text = serde_json::to_vec(&kept)?;
        AtomicWrite::new(&self.dir.join(INDEX_FILE))
            .write(|out| io::Write::write_all(out, &text))?;
        let backups = self.dir.join(BACKUPS_DIR);
        if let Ok(entries) = fs::read_dir(&backups) {
            let named: std::collections::HashSet<&str> = state
                .index
                .snapshots
                .iter()
                .flat_map(|s| s.backup_files.iter().map(String::as_str))
                .collect();
            for entry in entries.flatten() {
                let name = entry.file_name();
                if !named.contains(name.to_string_lossy().as_ref()) {
                    let _ = fs::remove_file(entry.path());
                }
            }
        }
        Ok(())
    }

    /// The snapshots of `ordered`'s turns from `target` on, in turn order (those that
    /// changed files).
    fn suffix<'a>(index: &'a Index, target: &str, ordered: &[String]) -> Vec<&'a Snapshot> {
        let Some(at) = ordered.iter().position(|id| id == target) else {
            return Vec::new();
        };
        ordered[at..]
            .iter()
            .filter_map(|id| {
                index
                    .snapshots
                    .iter()
                    .find(|s| &s.event_id == id && !s.files.is_empty())
            })
            .collect()
    }

    /// Each turn's file figures, for the root user turns `ordered` (oldest first).
    pub fn points(&self, ordered: &[String]) -> Vec<PointFiles> {
        let state = self.lock();
        ordered
            .iter()
            .map(|id| {
                let later = Self::suffix(&state.index, id, ordered);
                let mut keys: Vec<&str> = Vec::new();
                let mut restorable = false;
                for (key, file) in later.iter().flat_map(|s| s.files.iter()) {
                    restorable |= !matches!(file.preimage, Preimage::Skipped { .. });
                    if !keys.contains(&key.as_str()) {
                        keys.push(key);
                    }
                }
                let own = later.first().filter(|s| &s.event_id == id);
                PointFiles {
                    can_restore_files: restorable,
                    file_count: keys.len() as u64,
                    turn_changed_files: own.is_some(),
                    lines_added: own.map_or(0, |s| s.lines_added),
                    lines_removed: own.map_or(0, |s| s.lines_removed),
                }
            })
            .collect()
    }

    /// The files a rewind to `target` would restore, by path.
    pub fn preview(&self, target: &str, ordered: &[String]) -> Vec<FilePreview> {
        let state = self.lock();
        let mut files: Vec<(String, FilePreview, bool)> = Vec::new();
        for (key, file) in Self::suffix(&state.index, target, ordered)
            .into_iter()
            .flat_map(|s| s.files.iter())
        {
            match files.iter_mut().find(|(k, _, _)| k == key) {
                Some((_, p, created)) => {
                    p.lines_added += file.lines_added;
                    p.lines_removed += file.lines_removed;
                    p.change_type = change_type(*created, &file.postimage);
                }
                None => {
                    let created = matches!(file.preimage, Preimage::Absent);
                    let preview = FilePreview {
                        path: file.path.clone(),
                        change_type: change_type(created, &file.postimage),
                        lines_added: file.lines_added,
                        lines_removed: file.lines_removed,
                    };
                    files.push((key.clone(), preview, created));
                }
            }
        }
        let mut out: Vec<FilePreview> = files.into_iter().map(|(_, p, _)| p).collect();
        out.sort_by(|a, b| a.path.cmp(&b.path));
        out
    }

    /// Drops the snapshots of `event_ids` (turns a rewind removed) and their backups.
    pub fn prune(&self, event_ids: &[String]) -> Result<(), SnapshotError> {
        let mut state = self.lock();
        state
            .index
            .snapshots
            .retain(|s| !event_ids.contains(&s.event_id));
        if state.active.as_ref().is_some_and(|a| event_ids.contains(a)) {
            state.active = None;
        }
        self.save(&mut state)
    }
}

/// `created` when the discarded turns made the file, `deleted` when they removed it, else
/// `modified`.
fn change_type(created: bool, last: &Postimage) -> &'static str {
    match (created, last) {
        (true, _) => "created",
        (false, Postimage::Absent) => "deleted",
        _ => "modified",
    }
}

fn skipped_pre(reason: &str) -> Preimage {
    Preimage::Skipped {
        reason: reason.into(),
    }
}

fn unchanged(pre: &Preimage, post: &Postimage) -> bool {
    match (pre, post) {
        (Preimage::Absent, Postimage::Absent) => true,
        (
            Preimage::Content {
                content_hash: a, ..
            },
            Postimage::Content {
                content_hash: b, ..
            },
        ) => a == b,
        _ => false,
    }
}

/// What `path` is now, as a postimage.
fn postimage_of(path: &Path) -> Postimage {
    match fs::symlink_metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Postimage::Absent,
        Ok(meta) if meta.file_type().is_file() => match hash_file(path) {
            Ok(hash) => {
                let resolved = resolved_path(path);
                Postimage::Content {
                    content_hash: hash,
                    encoded_path: EncodedPath::of(&resolved),
                    resolved_path: resolved.display().to_string(),
                }
            }
            Err(_) => Postimage::Skipped {
                reason: "unreadable".into(),
            },
        },
        Ok(_) => Postimage::Skipped {
            reason: "not-a-regular-file".into(),
        },
        Err(_) => Postimage::Skipped {
            reason: "unverifiable-identity".into(),
        },
    }
}

/// The path with its directory's links resolved (the file itself is not followed).
fn resolved_path(path: &Path) -> PathBuf {
    match (path.parent().map(fs::canonicalize), path.file_name()) {
        (Some(Ok(dir)), Some(name)) => dir.join(name),
        _ => path.to_path_buf(),
    }
}

/// The index key of a path: the first 32 hex digits of its sha256, as the runtime's.
fn key_of(path: &Path) -> String {
    let mut hash = sha256_hex(path.as_os_str().as_bytes());
    hash.truncate(32);
    hash
}

/// A file's bytes, or `None` past [`MAX_FILE_BYTES`] (never read further).
fn read_bounded(path: &Path) -> io::Result<Option<Vec<u8>>> {
    let file = fs::File::open(path)?;
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes)?;
    Ok((bytes.len() as u64 <= MAX_FILE_BYTES).then_some(bytes))
}

/// The sha256 of a file of any size, read in pieces.
fn hash_file(path: &Path) -> io::Result<String> {
    let mut file = fs::File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hex(&hasher.finalize()))
}

fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}
