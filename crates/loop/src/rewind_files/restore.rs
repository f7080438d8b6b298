//! Restoring the files a rewind discards the turns of: each file the discarded turns changed
//! gets the preimage of the first of them that touched it back (a created file is removed).
//!
//! Nothing is written but the recorded paths, and only when each is still what the last
//! discarded turn left there: its content hashes to the recorded postimage (or it is still
//! absent), it is a regular file and not a link, its directory resolves to the directory it
//! resolved to then, and it lies under the session's working directory. A file that fails
//! any of these was changed by someone else since (or its directory was swapped): it is left
//! as it is and reported `user-modified`. A preimage that was not kept (over the bound, not a
//! regular file) or whose backup no longer hashes to it is `skipped-capture`.
//!
//! The files are replaced one by one (each atomically); before the first, every file about to
//! be replaced is copied under `rollback/`, so that a failure halfway puts back the ones done
//! (`files-rolled-back`), or says that it could not (`rollback-incomplete`).

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use turnstile_home::atomic::AtomicWrite;

use super::{
    BACKUPS_DIR, FileSnapshots, Postimage, Preimage, ROLLBACK_DIR, hash_file, read_bounded,
    sha256_hex,
};

/// How a restore ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RestoreOutcome {
    /// Every file that could be restored was.
    Success,
    /// A file could not be restored; the ones done were put back.
    FilesRolledBack,
    /// A file could not be restored, nor every one done put back.
    RollbackIncomplete,
}

/// Why a file was left as it is (`HistoryFileRestoreSkipReason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkipReason {
    /// It changed after the session's last captured write.
    UserModified,
    /// Its preimage was not kept faithfully.
    SkippedCapture,
}

impl SkipReason {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            SkipReason::UserModified => "user-modified",
            SkipReason::SkippedCapture => "skipped-capture",
        }
    }
}

/// What a restore did.
#[derive(Debug, Clone)]
pub struct Restore {
    /// How it ended.
    pub outcome: RestoreOutcome,
    /// The files given their preimage back, in the order the turns first changed them.
    pub restored_files: Vec<String>,
    /// The files left as they are, and why.
    pub skipped_files: Vec<(String, SkipReason)>,
    /// The turns whose snapshots go once the conversation is cut ([`FileSnapshots::prune`]).
    pub prune_event_ids: Vec<String>,
    /// What failed, for the rolled-back outcomes.
    pub error: Option<String>,
}

/// One file to put back: where, what it was, what the turns left.
struct Plan {
    path: PathBuf,
    pre: Preimage,
    post: Postimage,
    /// The preimage's bytes.
    bytes: Option<Vec<u8>>,
}

impl FileSnapshots {
    /// Restores the files the turns from `target` on changed (`ordered`: the root user
    /// turns, oldest first).
    pub fn restore(&self, target: &str, ordered: &[String]) -> Restore {
        let state = self.lock();
        let prune_event_ids = match ordered.iter().position(|id| id == target) {
            Some(at) => ordered[at..].to_vec(),
            None => Vec::new(),
        };
        // Each file's first preimage and last postimage across the discarded turns.
        let mut files: Vec<(String, String, Preimage, Postimage)> = Vec::new();
        for snapshot in Self::suffix(&state.index, target, ordered) {
            for (key, f) in &snapshot.files {
                match files.iter_mut().find(|(k, ..)| k == key) {
                    Some(entry) => entry.3 = f.postimage.clone(),
                    None => files.push((
                        key.clone(),
                        f.path.clone(),
                        f.preimage.clone(),
                        f.postimage.clone(),
                    )),
                }
            }
        }
        let mut skipped = Vec::new();
        let mut plans = Vec::new();
        for (_, path, pre, post) in files {
            match self.check(Path::new(&path), &pre, &post) {
                Ok(bytes) => plans.push(Plan {
                    path: PathBuf::from(path),
                    pre,
                    post,
                    bytes,
                }),
                Err(reason) => skipped.push((path, reason)),
            }
        }
        let (outcome, restored_files, error) = self.apply(&plans);
        Restore {
            outcome,
            restored_files,
            skipped_files: skipped,
            prune_event_ids,
            error,
        }
    }

    /// Whether `path` may be given `pre` back: the preimage's bytes (`None` for an absent
    /// one), or why not.
    fn check(
        &self,
        path: &Path,
        pre: &Preimage,
        post: &Postimage,
    ) -> Result<Option<Vec<u8>>, SkipReason> {
        if !self.is_own_path(path, pre, post) || !matches_now(path, post) {
            return Err(SkipReason::UserModified);
        }
        match pre {
            Preimage::Absent => Ok(None),
            Preimage::Skipped { .. } => Err(SkipReason::SkippedCapture),
            Preimage::Content {
                backup_file,
                content_hash,
                ..
            } => {
                let backup = self.dir.join(BACKUPS_DIR).join(backup_file);
                let ok =
                    backup_file.len() == 64 && backup_file.bytes().all(|b| b.is_ascii_hexdigit());
                match ok.then(|| read_bounded(&backup)) {
                    Some(Ok(Some(bytes))) if &sha256_hex(&bytes) == content_hash => Ok(Some(bytes)),
                    _ => Err(SkipReason::SkippedCapture),
                }
            }
        }
    }

    /// The path is one this session may write: absolute and normalized, under the working
    /// directory, its directory resolving (links followed) to where it resolved when the
    /// file was captured and to a place under the working directory's real path.
    fn is_own_path(&self, path: &Path, pre: &Preimage, post: &Postimage) -> bool {
        if !path.is_absolute()
            || turnstile_tools::paths::normalize(path) != path
            || !path.starts_with(&self.cwd)
            || path == self.cwd
        {
            return false;
        }
        let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
            return false;
        };
        let (Ok(real_parent), Ok(real_cwd)) =
            (fs::canonicalize(parent), fs::canonicalize(&self.cwd))
        else {
            return false;
        };
        if !real_parent.starts_with(&real_cwd) {
            return false;
        }
        let resolved = real_parent.join(name);
        let recorded = [
            match pre {
                Preimage::Content { resolved_path, .. } => Some(resolved_path),
                _ => None,
            },
            match post {
                Postimage::Content { resolved_path, .. } => Some(resolved_path),
                _ => None,
            },
        ];
        recorded
            .into_iter()
            .flatten()
            .all(|r| Path::new(r) == resolved)
    }

    /// Puts each plan's preimage in place, rolling back on the first failure.
    fn apply(&self, plans: &[Plan]) -> (RestoreOutcome, Vec<String>, Option<String>) {
        let rollback = self.dir.join(ROLLBACK_DIR);
        let staged = (|| -> io::Result<()> {
            fs::create_dir_all(&rollback)?;
            for (i, plan) in plans.iter().enumerate() {
                if matches!(plan.post, Postimage::Content { .. }) {
                    fs::copy(&plan.path, rollback.join(i.to_string()))?;
                }
            }
            Ok(())
        })();
        if let Err(e) = staged {
            clear(&rollback);
            let error = format!("cannot keep the files' current contents: {e}");
            return (RestoreOutcome::FilesRolledBack, Vec::new(), Some(error));
        }
        let mut done = Vec::new();
        for (i, plan) in plans.iter().enumerate() {
            let result = match (&plan.pre, &plan.bytes) {
                (Preimage::Content { mode, .. }, Some(bytes)) => AtomicWrite::new(&plan.path)
                    .mode(mode & 0o7777)
                    .write(|out| io::Write::write_all(out, bytes))
                    .map_err(io::Error::from),
                _ => match fs::remove_file(&plan.path) {
                    Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
                    other => other,
                },
            };
            if let Err(e) = result {
                let error = format!("cannot restore {}: {e}", plan.path.display());
                let complete = plans[..i]
                    .iter()
                    .enumerate()
                    .rev()
                    .all(|(j, p)| undo(p, &rollback.join(j.to_string())).is_ok());
                clear(&rollback);
                let outcome = if complete {
                    RestoreOutcome::FilesRolledBack
                } else {
                    RestoreOutcome::RollbackIncomplete
                };
                return (outcome, Vec::new(), Some(error));
            }
            done.push(plan.path.display().to_string());
        }
        clear(&rollback);
        (RestoreOutcome::Success, done, None)
    }
}

/// Puts back what a plan replaced: the copy kept under `rollback/`, or no file.
fn undo(plan: &Plan, copy: &Path) -> io::Result<()> {
    match plan.post {
        Postimage::Content { .. } => {
            let bytes = fs::read(copy)?;
            AtomicWrite::new(&plan.path)
                .write(|out| io::Write::write_all(out, &bytes))
                .map_err(io::Error::from)
        }
        _ => match fs::remove_file(&plan.path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            other => other,
        },
    }
}

/// Empties the rollback directory.
fn clear(dir: &Path) {
    if let Ok(entries) = fs::read_dir(dir) {
        for entry in entries.flatten() {
            let _ = fs::remove_file(entry.path());
        }
    }
}

/// Whether `path` is still what the last discarded turn left: absent, or a regular file (not
/// a link) with the recorded content.
fn matches_now(path: &Path, post: &Postimage) -> bool {
    match (fs::symlink_metadata(path), post) {
        (Err(e), Postimage::Absent) => e.kind() == io::ErrorKind::NotFound,
        (Ok(meta), Postimage::Content { content_hash, .. }) => {
            meta.file_type().is_file() && hash_file(path).is_ok_and(|h| &h == content_hash)
        }
        _ => false,
    }
}
