//! The writer's seal (`events.jsonl.seal`): one checkpoint a turn, continued across reopens,
//! lines from before the seal adopted, repairs recorded, a damaged seal left as evidence.

use std::fs;
use std::io::BufReader;
use std::path::Path;

use serde_json::value::RawValue;
use turnstile_journal::seal_file::seal_path;
use turnstile_journal::{
    Durability, Event, EventType, JournalWriter, Sealing, SessionPaths, StateRoot, Uuid,
    WriterOptions, repair,
};
use turnstile_seal::{
    Coverage, Finding, Format, LineHasher, RepairAction, Report, SealKey, Sealer, verify,
};

fn event(parent: Option<Uuid>, n: u32) -> Event {
    let data = RawValue::from_string(format!("{{\"n\":{n}}}")).unwrap();
    Event::with_raw_data(EventType::new("session.info"), data, parent)
}

fn options(sealing: Sealing) -> WriterOptions {
    WriterOptions {
        durability: Durability::Turn,
        sealing,
        ..Default::default()
    }
}

/// Appends `turns` turns of `per_turn` events, a turn boundary after each.
fn write_turns(w: &JournalWriter, turns: u32, per_turn: u32) {
    for t in 0..turns {
        for n in 0..per_turn {
            w.append(&event(w.last_id(), t * 100 + n)).unwrap();
        }
        w.turn_boundary().unwrap();
    }
}

fn new_session(sealing: Sealing) -> (tempfile::TempDir, SessionPaths) {
    let tmp = tempfile::tempdir().unwrap();
    let (w, _) = JournalWriter::create(
        &StateRoot::new(tmp.path()),
        Uuid::new_v4(),
        options(sealing),
    )
    .unwrap();
    let paths = w.paths().clone();
    write_turns(&w, 3, 5);
    w.close().unwrap();
    (tmp, paths)
}

fn check(events: &Path, key: Option<&SealKey>) -> Report {
    let journal = BufReader::new(fs::File::open(events).unwrap());
    let seal = BufReader::new(fs::File::open(seal_path(events)).unwrap());
    verify(journal, seal, key.map(SealKey::public).as_ref()).unwrap()
}

#[test]
fn a_writer_seals_each_turn_beside_the_journal() {
    let (_tmp, paths) = new_session(Sealing::Sealed);
    assert_eq!(
        seal_path(&paths.events),
        paths.dir.join("events.jsonl.seal")
    );
    let report = check(&paths.events, None);
    assert_eq!(report.finding, Finding::Intact);
    assert_eq!((report.sealed, report.checkpoints), (15, 3));
    assert!(report.adopted.is_empty() && report.repairs.is_empty());

    // A reopen goes on with the same chain.
    let (w, _) = JournalWriter::open(&paths, options(Sealing::Sealed)).unwrap();
    write_turns(&w, 1, 4);
    w.close().unwrap();
    let report = check(&paths.events, None);
    assert_eq!(report.finding, Finding::Intact);
    assert_eq!((report.sealed, report.checkpoints), (19, 4));
}

#[test]
fn a_line_edited_after_the_writer_closed_is_named() {
    let (_tmp, paths) = new_session(Sealing::Sealed);
    let text = fs::read_to_string(&paths.events).unwrap();
    let edited = text.replacen("{\"n\":102}", "{\"n\":902}", 1);
    assert_ne!(edited, text);
    fs::write(&paths.events, &edited).unwrap();
    let line = text
        .lines()
        .position(|l| l.contains("{\"n\":102}"))
        .unwrap() as u64
        + 1;
    assert!(
        matches!(check(&paths.events, None).finding, Finding::LineDiffers { line: l, .. } if l == line)
    );
}

#[test]
fn a_torn_tail_cut_on_open_is_recorded_and_the_journal_still_verifies() {
    let (_tmp, paths) = new_session(Sealing::Sealed);
    let mut bytes = fs::read(&paths.events).unwrap();
    let torn = b"{\"type\":\"session.info\",\"da";
    bytes.extend_from_slice(torn);
    fs::write(&paths.events, &bytes).unwrap();
    let (w, recovery) = JournalWriter::open(&paths, options(Sealing::Sealed)).unwrap();
    assert!(recovery.torn_tail.is_some());
    w.close().unwrap();
    let report = check(&paths.events, None);
    assert_eq!(report.finding, Finding::Intact);
    let [seen] = report.repairs.as_slice() else {
        panic!("one repair: {:?}", report.repairs)
    };
    assert_eq!(seen.repair.action, RepairAction::CutTail);
    assert_eq!(seen.repair.unsealed_bytes, torn.len() as u64);
    assert!(seen.repair.removed.is_empty());
}

#[test]
fn a_salvage_of_a_changed_sealed_line_stays_visible() {
    let (_tmp, paths) = new_session(Sealing::Sealed);
    let text = fs::read_to_string(&paths.events).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines[2] = "not json";
    fs::write(&paths.events, lines.join("\n") + "\n").unwrap();
    assert!(matches!(
        check(&paths.events, None).finding,
        Finding::LineDiffers { line: 3, .. }
    ));
    let outcome = repair(&paths.events, true).unwrap();
    assert_eq!(outcome.lines_moved, 1);
    let report = check(&paths.events, None);
    assert_eq!(report.repairs.len(), 1, "{report:?}");
    assert_eq!(report.repairs[0].repair.action, RepairAction::Salvage);
    assert!(
        matches!(
            report.finding,
            Finding::RemovedLineDiffers { sealed: 3, .. }
        ),
        "{report:?}"
    );
}

#[test]
fn lines_written_before_the_seal_are_adopted() {
    let (tmp, paths) = new_session(Sealing::Off);
    assert!(
        !seal_path(&paths.events).exists(),
        "no seal without sealing"
    );
    let (w, _) = JournalWriter::open(&paths, options(Sealing::Sealed)).unwrap();
    write_turns(&w, 1, 2);
    w.close().unwrap();
    let report = check(&paths.events, None);
    assert_eq!(report.finding, Finding::Intact);
    assert_eq!(report.adopted, vec![(1, 15)]);
    assert_eq!(report.sealed, 17);
    drop(tmp);
}

#[test]
fn a_seal_of_the_first_format_is_continued_in_it() {
    // A journal sealed in format 1, as a writer before format 2 left it.
    let (_tmp, paths) = new_session(Sealing::Off);
    let mut sealer = Sealer::resume(Coverage::empty(), Format::V1, None);
    let mut seal = sealer.begin_record();
    let mut lines = LineHasher::new(BufReader::new(fs::File::open(&paths.events).unwrap()), 0);
    while let Some(line) = lines.next_line().unwrap() {
        sealer.push(&line.digest, line.len);
    }
    seal.extend(sealer.checkpoint(false).unwrap());
    fs::write(seal_path(&paths.events), &seal).unwrap();

    let (w, _) = JournalWriter::open(&paths, options(Sealing::Sealed)).unwrap();
    write_turns(&w, 1, 2);
    w.close().unwrap();
    let text = fs::read_to_string(seal_path(&paths.events)).unwrap();
    let records: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(records[0]["format"], Format::V1.name());
    assert_eq!(records.len(), 3, "{text}");
    assert_eq!(
        records[2]["lines"], 17,
        "the writer's checkpoint in format 1: {text}"
    );
    let report = check(&paths.events, None);
    assert_eq!(report.finding, Finding::Intact);
    assert_eq!((report.sealed, report.checkpoints), (17, 2));
    assert!(report.adopted.is_empty());
}

#[test]
fn a_signed_seal_checks_only_against_its_key() {
    let key = SealKey::from_seed([42; 32]);
    let (_tmp, paths) = new_session(Sealing::SignedWith(key.clone().into()));
    let report = check(&paths.events, Some(&key));
    assert_eq!(report.finding, Finding::Intact);
    assert_eq!(report.signers, vec![key.public().to_base64()]);
    let other = SealKey::from_seed([43; 32]);
    assert!(matches!(
        check(&paths.events, Some(&other)).finding,
        Finding::WrongKey { .. }
    ));
}

#[test]
fn a_damaged_seal_is_never_rewritten_by_a_writer() {
    let (_tmp, paths) = new_session(Sealing::Sealed);
    let seal = seal_path(&paths.events);
    let mut bytes = fs::read(&seal).unwrap();
    let at = bytes.iter().position(|&b| b == b'\n').unwrap() + 3;
    bytes[at] = b'#';
    fs::write(&seal, &bytes).unwrap();
    let (w, _) = JournalWriter::open(&paths, options(Sealing::Sealed)).unwrap();
    write_turns(&w, 1, 2);
    w.close().unwrap();
    assert_eq!(
        fs::read(&seal).unwrap(),
        bytes,
        "the evidence is kept as it was"
    );
    assert!(matches!(
        check(&paths.events, None).finding,
        Finding::SealEdited { seal_line: 2, .. }
    ));
}

#[test]
fn a_link_planted_as_the_seal_is_never_followed() {
    let (tmp, paths) = new_session(Sealing::Off);
    let victim = tmp.path().join("victim");
    fs::write(&victim, b"precious\n").unwrap();
    std::os::unix::fs::symlink(&victim, seal_path(&paths.events)).unwrap();
    let (w, _) = JournalWriter::open(&paths, options(Sealing::Sealed)).unwrap();
    write_turns(&w, 1, 2);
    w.close().unwrap();
    let mut bytes = fs::read(&paths.events).unwrap();
    bytes.extend_from_slice(b"{\"torn");
    fs::write(&paths.events, &bytes).unwrap();
    repair(&paths.events, false).unwrap();
    assert_eq!(fs::read(&victim).unwrap(), b"precious\n");
}
