//! Repairs: cutting a torn tail (automatic on open) and salvaging mid-file damage (explicit).
//!
//! Nothing is ever deleted: whatever is cut from the journal goes to a side file next to it
//! first, and that side file is fsynced before the journal is truncated or replaced.

use std::io::{self, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::layout::LayoutError;
use crate::lines::BoundedLines;
use crate::reader::{ReadMode, check_line};
use crate::scan::{JournalScan, ScanError, Verdict};
use crate::seal_file::{TakenLine, lines_from, record_repair, seal_name};
use crate::session_dir::{Access, SessionDir, SideFile};
use turnstile_seal::{LineDigest, LineDigester, RepairAction};

/// Why a repair failed; the journal is unchanged unless the message says otherwise.
#[derive(Debug, thiserror::Error)]
pub enum RepairError {
    /// Reading the journal failed.
    #[error(transparent)]
    Scan(#[from] ScanError),
    /// An I/O step failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file involved.
        path: PathBuf,
        /// The OS error.
        source: io::Error,
    },
    /// A file is a link, or a directory fsync failed.
    #[error(transparent)]
    Layout(#[from] LayoutError),
    /// Mid-file damage was found but salvage was not asked for.
    #[error("{}:{line} (byte {offset}): {message}; {bad_total} bad line(s) in the middle of the journal; run `turnstile repair --salvage` to move them aside and keep every good line", path.display())]
    NeedsSalvage {
        /// The journal.
        path: PathBuf,
        /// First bad line.
        line: u64,
        /// Its byte offset.
        offset: u64,
        /// What is wrong with it.
        message: String,
        /// How many bad lines.
        bad_total: u64,
    },
}

/// What a repair did.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RepairOutcome {
    /// Bytes removed from the journal.
    pub bytes_cut: u64,
    /// Lines moved aside (a torn tail counts as one).
    pub lines_moved: u64,
    /// The side file holding what was removed.
    pub side_file: Option<PathBuf>,
    /// Why (for messages).
    pub reason: Option<String>,
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> RepairError + '_ {
    move |source| RepairError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The session directory and file name of a journal path.
fn split(journal: &Path) -> Result<(SessionDir, String), RepairError> {
    let name = journal
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| LayoutError::WrongKind {
            path: journal.to_path_buf(),
            what: "is not a journal file name",
        })?
        .to_owned();
    let dir = match journal.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    Ok((SessionDir::open(dir)?, name))
}

/// Moves the bytes from `cut_at` (the start of line `line`) to the end into a `torn-` side
/// file, truncates the journal at `cut_at`, and fsyncs the side file, the journal and the
/// directory (in that order); then records the cut in the journal's seal, if it has one.
pub fn cut_tail(
    dir: &SessionDir,
    name: &str,
    cut_at: u64,
    line: u64,
    reason: &str,
) -> Result<RepairOutcome, RepairError> {
    let journal = dir.join(name);
    let mut file = dir.open_file(name, Access::ReadWrite)?;
    let len = file.metadata().map_err(io_err(&journal))?.len();
    if cut_at >= len {
        return Ok(RepairOutcome::default());
    }
    // The lines cut, as the seal needs them (their digests), read before they are gone.
    let cut_lines = if dir.stat(&seal_name(name))?.is_some() {
        Some(lines_from(dir, name, cut_at, line).map_err(io_err(&journal))?)
    } else {
        None
    };
    file.seek(SeekFrom::Start(cut_at))
        .map_err(io_err(&journal))?;
    let mut side = SideFile::create(dir, &format!("{name}.torn"))?;
    let side_path = side.path();
    // Copied through a small buffer, never held: a torn tail may be a 2 GB hole. On failure
    // (a full disk) the side file is removed again and the journal is untouched.
    let mut tail = BufReader::with_capacity(1 << 16, (&mut file).take(len - cut_at));
    let copied = io::copy(&mut tail, &mut side.file).map_err(io_err(&side_path))?;
    side.file.sync_all().map_err(io_err(&side_path))?;
    let side_path = side.keep();
    file.set_len(cut_at).map_err(io_err(&journal))?;
    file.sync_all().map_err(io_err(&journal))?;
    dir.sync()?;
    if let Some((lines, unterminated)) = cut_lines {
        record_repair(
            dir,
            name,
            RepairAction::CutTail,
            &lines,
            unterminated,
            Some(&side_path),
        )?;
    }
    tracing::info!(journal = %journal.display(), cut_at, bytes = copied, side = %side_path.display(), reason, "cut a torn tail");
    Ok(RepairOutcome {
        bytes_cut: copied,
        lines_moved: 1,
        side_file: Some(side_path),
        reason: Some(reason.to_owned()),
    })
}

/// Repairs what is safe to repair: a torn tail (or ephemeral events after the last persisted
/// one) is cut to a side file; mid-file damage is refused unless `salvage` is set, in which
/// case every bad line (and a torn tail) is moved to a `salvaged-` side file and every good
/// line is kept, in order. Ephemeral events in the middle are kept: the event after each one
/// names it as its parent.
///
/// The caller must hold the session's writer lock.
pub fn repair(journal: &Path, salvage: bool) -> Result<RepairOutcome, RepairError> {
    let (dir, name) = split(journal)?;
    repair_in(&dir, &name, salvage)
}

/// [`repair`] of the journal `name` in an open session directory.
pub fn repair_in(
    dir: &SessionDir,
    name: &str,
    salvage: bool,
) -> Result<RepairOutcome, RepairError> {
    let journal = dir.join(name);
    let scan = JournalScan::of_file(&journal)?;
    match scan.verdict() {
        Verdict::Clean => Ok(RepairOutcome::default()),
        Verdict::TornTail {
            cut_at,
            line,
            reason,
            ..
        } => cut_tail(dir, name, cut_at, line, &reason),
        Verdict::Damaged { first, bad_total } if !salvage => Err(RepairError::NeedsSalvage {
            path: journal,
            line: first.line,
            offset: first.offset,
            message: first.message,
            bad_total,
        }),
        Verdict::Damaged { .. } => salvage_lines(dir, name),
    }
}

/// Rewrites the journal keeping only valid lines; the rest goes to a side file.
/// The new journal replaces the old one by an atomic rename.
fn salvage_lines(dir: &SessionDir, name: &str) -> Result<RepairOutcome, RepairError> {
    let journal = dir.join(name);
    let input = dir.open_file(name, Access::Read)?;
    let input = BufReader::with_capacity(1 << 16, input);
    let mut kept = SideFile::create(dir, &format!("{name}.salvage-tmp"))?;
    let tmp = kept.path();
    let mut side = SideFile::create(dir, &format!("{name}.salvaged"))?;
    let side_path = side.path();
    let mut kept_out = io::BufWriter::new(&mut kept.file);
    let mut outcome = RepairOutcome {
        side_file: Some(side_path.clone()),
        reason: Some("bad lines moved aside by --salvage".into()),
        ..Default::default()
    };
    // What the seal needs of each line moved aside: where it was and its digest.
    let mut removed: Vec<TakenLine> = Vec::new();
    let mut unterminated = 0;
    // An oversized line is a bad line: streamed into the side file as it is read, never held.
    let mut lines = BoundedLines::new(input, crate::lines::max_line_bytes());
    loop {
        let side_file = &mut side.file;
        let mut spilled = LineDigester::default();
        let next = lines
            .next_line_spilling(&mut |piece| {
                spilled.update(piece);
                side_file.write_all(piece)
            })
            .map_err(io_err(&journal))?;
        let Some(info) = next else { break };
        let buf = lines.bytes();
        let good = !info.oversized
            && buf
                .strip_suffix(b"\n")
                .is_some_and(|body| check_line(body, ReadMode::Lenient).is_ok());
        if good {
            kept_out.write_all(buf).map_err(io_err(&tmp))?;
        } else {
            if !info.oversized {
                side.file.write_all(buf).map_err(io_err(&side_path))?;
            }
            if !info.terminated {
                side.file.write_all(b"\n").map_err(io_err(&side_path))?;
            }
            outcome.lines_moved += 1;
            outcome.bytes_cut += info.len;
            if !info.terminated {
                unterminated = info.len;
            } else {
                let digest = if info.oversized {
                    spilled.finish()
                } else {
                    LineDigest::of(buf)
                };
                removed.push(TakenLine {
                    line: info.line,
                    offset: info.offset,
                    len: info.len,
                    digest,
                });
            }
        }
    }
    kept_out.flush().map_err(io_err(&tmp))?;
    drop(kept_out);
    side.file.sync_all().map_err(io_err(&side_path))?;
    kept.file.sync_all().map_err(io_err(&tmp))?;
    let side_path = side.keep();
    let tmp_name = kept.name().to_owned();
    dir.rename(&tmp_name, name)?;
    // Renamed: the temporary name no longer exists, so there is nothing left to remove.
    let _ = kept.keep();
    dir.sync()?;
    record_repair(
        dir,
        name,
        RepairAction::Salvage,
        &removed,
        unterminated,
        Some(&side_path),
    )?;
    tracing::info!(journal = %journal.display(), lines = outcome.lines_moved, side = %side_path.display(), "salvaged a damaged journal");
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use uuid::Uuid;

    fn line(n: u32) -> String {
        format!(
            r#"{{"type":"session.info","data":{{"n":{n}}},"id":"{}","timestamp":"2026-11-29T14:34:34.757Z","parentId":null}}"#,
            Uuid::from_u128(u128::from(n) + 1)
        )
    }

    fn journal_with(bytes: &[u8]) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        fs::write(&path, bytes).unwrap();
        (dir, path)
    }

    fn side_files(dir: &Path, kind: &str) -> Vec<PathBuf> {
        fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.to_string_lossy().contains(&format!(".{kind}-")))
            .collect()
    }

    #[test]
    fn clean_journal_is_untouched() {
        let text = format!("{}\n{}\n", line(1), line(2));
        let (dir, path) = journal_with(text.as_bytes());
        assert_eq!(repair(&path, false).unwrap(), RepairOutcome::default());
        assert_eq!(fs::read_to_string(&path).unwrap(), text);
        assert!(side_files(dir.path(), "torn").is_empty());
    }

    #[test]
    fn each_kind_of_torn_tail_is_cut_and_kept_aside() {
        let good = format!("{}\n{}\n", line(1), line(2));
        let tails: Vec<Vec<u8>> = vec![
            line(3).as_bytes()[..40].to_vec(),                     // no newline
            b"{\"type\":\"broken\n".to_vec(),                      // unparsable, terminated
            vec![0; 512],                                          // NULs after a power loss
            [&line(3).as_bytes()[..10], &[0u8; 100][..]].concat(), // partial then NULs
        ];
        for tail in tails {
            let (dir, path) = journal_with(&[good.as_bytes(), &tail].concat());
            let outcome = repair(&path, false).unwrap();
            assert_eq!(fs::read_to_string(&path).unwrap(), good);
            assert_eq!(outcome.bytes_cut, tail.len() as u64);
            let sides = side_files(dir.path(), "torn");
            assert_eq!(sides.len(), 1);
            assert_eq!(fs::read(&sides[0]).unwrap(), tail);
        }
    }

    #[test]
    fn mid_file_damage_needs_salvage_and_salvage_keeps_every_good_line() {
        let text = format!(
            "{}\nnot json\n{}\n\0\0\n{}\n{}",
            line(1),
            line(2),
            line(3),
            &line(4)[..9]
        );
        let (dir, path) = journal_with(text.as_bytes());
        let err = repair(&path, false).unwrap_err().to_string();
        assert!(
            err.contains(":2 (byte") && err.contains("--salvage"),
            "{err}"
        );
        assert_eq!(
            fs::read_to_string(&path).unwrap(),
            text,
            "refused repair changes nothing"
        );

        let outcome = repair(&path, true).unwrap();
        assert_eq!(outcome.lines_moved, 3);
        assert_eq!(
            fs::read_to_string(&path).unwrap(),
            format!("{}\n{}\n{}\n", line(1), line(2), line(3))
        );
        let sides = side_files(dir.path(), "salvaged");
        let moved = fs::read_to_string(&sides[0]).unwrap();
        assert_eq!(moved, format!("not json\n\0\0\n{}\n", &line(4)[..9]));
        assert!(side_files(dir.path(), "salvage-tmp").is_empty());
    }
}
