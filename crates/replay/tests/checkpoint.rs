//! Checkpoints: state from checkpoint + tail equals the full fold; anything suspicious falls
//! back to a full fold and says why.

use crate::common;

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use common::lines;
use common::synth::{SynthConfig, session_bytes};
use proptest::prelude::*;
use turnstile_replay::checkpoint::{CHECKPOINT_VERSION, GUARD_BYTES};
use turnstile_replay::{
    CHECKPOINT_FILE, Checkpoint, CheckpointRejection, SessionState, adopt_checkpoint, fold_file,
    verify_checkpoint, write_checkpoint,
};

const EVENTS: &str = "events.jsonl";

fn journal(seed: u64, kib: u64) -> Vec<u8> {
    let config = SynthConfig {
        seed,
        target_bytes: kib * 1024,
        max_output_bytes: 8192,
        ..SynthConfig::default()
    };
    session_bytes(&config).0
}

fn append(dir: &Path, bytes: &[u8]) {
    let mut file = OpenOptions::new()
        .append(true)
        .create(true)
        .open(dir.join(EVENTS))
        .unwrap();
    file.write_all(bytes).unwrap();
}

fn full_fold(dir: &Path) -> SessionState {
    fold_file(&dir.join(EVENTS)).unwrap().state
}

fn checkpointed(bytes: &[u8], cut: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    append(dir.path(), &bytes[..cut]);
    let info = write_checkpoint(dir.path()).unwrap();
    assert!(info.offset <= cut as u64);
    append(dir.path(), &bytes[cut..]);
    dir
}

fn load(dir: &Path) -> (SessionState, turnstile_replay::LoadReport) {
    SessionState::load(dir).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]
    /// Cut anywhere (mid-line too), checkpoint, append the rest: checkpoint + tail = full fold.
    #[test]
    fn checkpoint_plus_tail_is_the_full_fold(seed in 0u64..500, at in 0.0f64..=1.0) {
        let bytes = journal(seed, 96);
        let cut = ((bytes.len() as f64) * at) as usize;
        let dir = checkpointed(&bytes, cut);
        let (state, report) = load(dir.path());
        prop_assert!(report.used_checkpoint, "{:?}", report.fallback_reason);
        prop_assert_eq!(&state, &full_fold(dir.path()));
        prop_assert_eq!(report.prefix_crc32c, crc32c::crc32c(&bytes));
        prop_assert_eq!(report.tail_bytes + report.checkpoint_offset, bytes.len() as u64);
        // A checkpoint written from a checkpoint keeps the prefix CRC right.
        write_checkpoint(dir.path()).unwrap();
        prop_assert!(verify_checkpoint(dir.path()).unwrap().is_ok());
        let (again, report) = load(dir.path());
        prop_assert!(report.used_checkpoint && report.tail_bytes == 0);
        prop_assert_eq!(again, state);
    }
}

#[test]
fn written_atomically_and_private() {
    let bytes = journal(1, 64);
    let dir = checkpointed(&bytes, bytes.len() / 2);
    let mode = fs::metadata(dir.path().join(CHECKPOINT_FILE))
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o600);
    let names: Vec<String> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names.len(), 2, "no temporary file left: {names:?}");
    assert!(verify_checkpoint(dir.path()).unwrap().is_ok());
}

/// Loading falls back to a full fold for the reason `$why` (a [`CheckpointRejection`] pattern),
/// says so for people too, and still gives the full fold's state.
macro_rules! expect_fallback {
    ($dir:expr, $why:pat) => {{
        let dir: &Path = $dir;
        let (state, report) = load(dir);
        assert!(!report.used_checkpoint);
        assert!(
            matches!(report.fallback, Some($why)),
            "expected {}, got {:?}",
            stringify!($why),
            report.fallback
        );
        assert_eq!(
            report.fallback_reason,
            report.fallback.as_ref().map(ToString::to_string)
        );
        assert!(matches!(Checkpoint::trusted(dir), Err($why)));
        assert_eq!(state, full_fold(dir));
    }};
}

#[test]
fn missing_checkpoint_is_a_full_fold() {
    let dir = tempfile::tempdir().unwrap();
    append(dir.path(), &journal(2, 32));
    expect_fallback!(dir.path(), CheckpointRejection::Missing);
}

#[test]
fn corrupted_checkpoint_falls_back() {
    let bytes = journal(3, 64);
    let dir = checkpointed(&bytes, bytes.len() / 2);
    let path = dir.path().join(CHECKPOINT_FILE);
    let mut text = fs::read(&path).unwrap();
    text.truncate(text.len() / 2);
    fs::write(&path, text).unwrap();
    expect_fallback!(dir.path(), CheckpointRejection::Invalid(_));
}

#[test]
fn other_version_falls_back() {
    let bytes = journal(4, 64);
    let dir = checkpointed(&bytes, bytes.len());
    let path = dir.path().join(CHECKPOINT_FILE);
    let text = fs::read_to_string(&path).unwrap().replacen(
        &format!("\"version\":{CHECKPOINT_VERSION}"),
        "\"version\":99",
        1,
    );
    fs::write(&path, text).unwrap();
    expect_fallback!(dir.path(), CheckpointRejection::OtherVersion { found: 99 });
}

#[test]
fn replaced_journal_falls_back() {
    let bytes = journal(5, 64);
    let dir = checkpointed(&bytes, bytes.len());
    // Same content, new file (as `cp` + `mv`, or a restore from backup, would do).
    let other = dir.path().join("other.jsonl");
    fs::write(&other, journal(6, 80)).unwrap();
    fs::rename(&other, dir.path().join(EVENTS)).unwrap();
    expect_fallback!(dir.path(), CheckpointRejection::Replaced);
}

#[test]
fn adopted_by_a_copy_of_the_same_bytes_and_refused_by_other_bytes() {
    let bytes = journal(9, 64);
    let original = checkpointed(&bytes, bytes.len() / 2);
    let made = Checkpoint::trusted(original.path()).unwrap();
    let prefix = &bytes[..made.offset as usize];
    // Another host's copy from the store: the same bytes in another file, more appended.
    let copy = tempfile::tempdir().unwrap();
    append(copy.path(), &bytes);
    adopt_checkpoint(copy.path(), made.clone()).unwrap();
    let (state, report) = load(copy.path());
    assert!(report.used_checkpoint, "{:?}", report.fallback_reason);
    assert_eq!(report.tail_bytes, (bytes.len() - prefix.len()) as u64);
    assert_eq!(state, full_fold(copy.path()));
    assert!(verify_checkpoint(copy.path()).unwrap().is_ok());
    // A copy whose bytes differ just before the covered offset: the load's guard refuses it.
    let other = tempfile::tempdir().unwrap();
    let mut changed = bytes.clone();
    let at = prefix.len() - 60;
    changed[at] = if changed[at] == b'0' { b'1' } else { b'0' };
    append(other.path(), &changed);
    adopt_checkpoint(other.path(), made).unwrap();
    expect_fallback!(other.path(), CheckpointRejection::GuardChanged);
}

#[test]
fn truncated_journal_falls_back() {
    let bytes = journal(7, 64);
    let dir = checkpointed(&bytes, bytes.len());
    let file = OpenOptions::new()
        .write(true)
        .open(dir.path().join(EVENTS))
        .unwrap();
    let ls = lines(&bytes);
    let keep = bytes.len() - ls.last().unwrap().len() - 1;
    file.set_len(keep as u64).unwrap();
    expect_fallback!(dir.path(), CheckpointRejection::Truncated { .. });
}

#[test]
fn rewritten_tail_of_the_prefix_falls_back() {
    let bytes = journal(8, 64);
    let dir = checkpointed(&bytes, bytes.len());
    // Same size, same file, one byte changed just before the offset.
    let path = dir.path().join(EVENTS);
    let mut content = fs::read(&path).unwrap();
    let at = content.len() - 60;
    content[at] = if content[at] == b'0' { b'1' } else { b'0' };
    let file = OpenOptions::new().write(true).open(&path).unwrap();
    std::os::unix::fs::FileExt::write_all_at(&file, &content, 0).unwrap();
    expect_fallback!(dir.path(), CheckpointRejection::GuardChanged);
}

#[test]
fn offset_inside_a_line_falls_back() {
    let bytes = journal(9, 64);
    let dir = checkpointed(&bytes, bytes.len());
    let path = dir.path().join(CHECKPOINT_FILE);
    let mut cp: serde_json::Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
    let offset = cp["offset"].as_u64().unwrap() - 1;
    cp["offset"] = offset.into();
    cp["state"]["byteSize"] = offset.into();
    cp["guardStart"] = offset.saturating_sub(GUARD_BYTES).into();
    fs::write(&path, serde_json::to_vec(&cp).unwrap()).unwrap();
    expect_fallback!(dir.path(), CheckpointRejection::NotAtLineEnd { .. });
}

/// A change deep in the prefix, outside the guarded 64 KiB, is what only `verify` sees.
#[test]
fn verify_checks_the_whole_prefix() {
    let bytes = journal(10, 400);
    let dir = checkpointed(&bytes, bytes.len());
    let path = dir.path().join(EVENTS);
    let mut content = fs::read(&path).unwrap();
    let at = content.iter().position(|&b| b == b'7').unwrap();
    content[at] = b'8';
    let file = OpenOptions::new().write(true).open(&path).unwrap();
    std::os::unix::fs::FileExt::write_all_at(&file, &content, 0).unwrap();
    let (_, report) = load(dir.path());
    assert!(report.used_checkpoint, "the fast path trusts its guard");
    let verdict = verify_checkpoint(dir.path()).unwrap();
    assert!(verdict.guard_ok && !verdict.prefix_crc_ok, "{verdict:?}");
}
