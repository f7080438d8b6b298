//! Verification of sealed fixture journals, and of every kind of damage: a line edited (each
//! line, by a property test), a truncated tail, lines reordered or removed, a seal edited, a
//! signature by the wrong key.

use std::path::Path;

use proptest::prelude::*;
use turnstile_seal::{
    Finding, LineDigest, Record, Removed, Repair, RepairAction, Report, SealKey, Sealer, VerifyKey,
    verify,
};

pub(crate) fn fixture(name: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

pub(crate) fn lines(journal: &[u8]) -> Vec<&[u8]> {
    journal.split_inclusive(|&b| b == b'\n').collect()
}

/// Seals `journal` as a writer would, a checkpoint at every turn end (and at the end).
pub(crate) fn seal_of(journal: &[u8], key: Option<SealKey>) -> Vec<u8> {
    let mut sealer = Sealer::begin(key);
    let mut seal = sealer.begin_record();
    for line in lines(journal) {
        sealer.push(&LineDigest::of(line), line.len() as u64);
        let turn_end = b"\"assistant.turn_end\"";
        if line.windows(turn_end.len()).any(|w| w == turn_end) {
            seal.extend(sealer.checkpoint(false).unwrap());
        }
    }
    seal.extend(sealer.checkpoint(false).unwrap_or_default());
    seal
}

pub(crate) fn check(journal: &[u8], seal: &[u8], key: Option<&VerifyKey>) -> Report {
    verify(journal, seal, key).unwrap()
}

fn joined(lines: &[&[u8]]) -> Vec<u8> {
    lines.concat()
}

#[test]
fn sealed_fixtures_verify_intact() {
    for name in [
        "multi-turn/events.jsonl",
        "subagents/events.jsonl",
        "copilot-runtime/c2-compacted.events.jsonl",
    ] {
        let journal = fixture(name);
        let seal = seal_of(&journal, None);
        let report = check(&journal, &seal, None);
        assert_eq!(report.finding, Finding::Intact, "{name}");
        assert_eq!(report.sealed, lines(&journal).len() as u64, "{name}");
        assert!(report.checkpoints > 1, "{name}: a checkpoint a turn");
    }
}

#[test]
fn lines_after_the_last_checkpoint_are_an_unsealed_tail() {
    let journal = fixture("multi-turn/events.jsonl");
    let all = lines(&journal);
    let seal = seal_of(&joined(&all[..40]), None);
    let report = check(&journal, &seal, None);
    let tail: usize = all[40..].iter().map(|l| l.len()).sum();
    assert_eq!(
        report.finding,
        Finding::UnsealedTail {
            first_line: 41,
            lines: all.len() as u64 - 40,
            bytes: tail as u64
        }
    );
}

#[test]
fn a_truncated_tail_is_missing_at_every_cut() {
    let journal = fixture("multi-turn/events.jsonl");
    let seal = seal_of(&journal, None);
    let all = lines(&journal);
    for keep in 0..all.len() {
        let cut = joined(&all[..keep]);
        assert_eq!(
            check(&cut, &seal, None).finding,
            Finding::MissingTail {
                lines: keep as u64,
                sealed_lines: all.len() as u64
            },
            "kept {keep} lines"
        );
        // Cut in the middle of the next line: the same, the partial line is no line.
        let mut partial = cut.clone();
        partial.extend_from_slice(&all[keep][..all[keep].len() / 2]);
        assert!(
            matches!(check(&partial, &seal, None).finding, Finding::MissingTail { lines, .. } if lines == keep as u64),
            "kept {keep} lines and half of the next"
        );
    }
}

#[test]
fn swapped_lines_are_a_reordering_naming_both_places() {
    let journal = fixture("multi-turn/events.jsonl");
    let seal = seal_of(&journal, None);
    let mut all = lines(&journal);
    all.swap(9, 30);
    let report = check(&joined(&all), &seal, None);
    assert!(
        matches!(
            report.finding,
            Finding::Reordered {
                line: 10,
                sealed_as: 31,
                now_at: Some(31),
                ..
            }
        ),
        "{:?}",
        report.finding
    );
}

#[test]
fn a_removed_line_is_missing_and_an_inserted_one_differs() {
    let journal = fixture("multi-turn/events.jsonl");
    let seal = seal_of(&journal, None);
    let all = lines(&journal);
    let without: Vec<&[u8]> = all
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != 20)
        .map(|(_, l)| *l)
        .collect();
    assert!(matches!(
        check(&joined(&without), &seal, None).finding,
        Finding::LinesMissing {
            line: 21,
            first_missing: 21,
            count: 1,
            ..
        }
    ));
    let mut with: Vec<&[u8]> = all.clone();
    let extra = b"{\"type\":\"session.info\",\"data\":{}}\n";
    with.insert(5, extra);
    assert!(matches!(
        check(&joined(&with), &seal, None).finding,
        Finding::LineDiffers { line: 6, .. }
    ));
}

#[test]
fn an_edited_seal_is_named_not_the_journal() {
    let journal = fixture("multi-turn/events.jsonl");
    let seal = seal_of(&journal, None);
    let text = String::from_utf8(seal.clone()).unwrap();
    let records: Vec<&str> = text.lines().collect();
    // A chain value changed in the second checkpoint.
    let mut record: serde_json::Value = serde_json::from_str(records[2]).unwrap();
    let chain = record["chain"].as_str().unwrap().to_owned();
    let flipped = format!(
        "{}{}",
        if chain.starts_with('0') { "1" } else { "0" },
        &chain[1..]
    );
    record["chain"] = flipped.into();
    let mut edited: Vec<String> = records.iter().map(|r| r.to_string()).collect();
    edited[2] = record.to_string();
    let report = check(&journal, (edited.join("\n") + "\n").as_bytes(), None);
    assert!(
        matches!(report.finding, Finding::SealEdited { seal_line: 3, .. }),
        "{:?}",
        report.finding
    );

    // A digest changed: the line is intact, the chain holds, the seal is what was edited.
    let mut record: serde_json::Value = serde_json::from_str(records[1]).unwrap();
    let digests = record["digests"].as_str().unwrap().to_owned();
    let flipped = format!(
        "{}{}",
        if digests.starts_with('A') { "B" } else { "A" },
        &digests[1..]
    );
    record["digests"] = flipped.into();
    let mut edited: Vec<String> = records.iter().map(|r| r.to_string()).collect();
    edited[1] = record.to_string();
    let report = check(&journal, (edited.join("\n") + "\n").as_bytes(), None);
    assert!(
        matches!(report.finding, Finding::SealEdited { seal_line: 2, .. }),
        "{:?}",
        report.finding
    );

    // Not a record at all; a record dropped.
    let mut garbled = seal.clone();
    garbled[5] = b'#';
    assert!(matches!(
        check(&journal, &garbled, None).finding,
        Finding::SealEdited { seal_line: 1, .. }
    ));
    let dropped = format!("{}\n{}\n", records[0], records[2..].join("\n"));
    assert!(!matches!(
        check(&journal, dropped.as_bytes(), None).finding,
        Finding::Intact
    ));
}

#[test]
fn signatures_check_against_the_key_asked_for() {
    let journal = fixture("multi-turn/events.jsonl");
    let key = SealKey::from_seed([7; 32]);
    let other = SealKey::from_seed([8; 32]);
    let seal = seal_of(&journal, Some(key.clone()));

    let report = check(&journal, &seal, Some(&key.public()));
    assert_eq!(report.finding, Finding::Intact);
    assert_eq!(report.signers, vec![key.public().to_base64()]);

    assert_eq!(
        check(&journal, &seal, Some(&other.public())).finding,
        Finding::WrongKey {
            seal_line: 2,
            signer: Some(key.public().to_base64())
        }
    );
    let unsigned = seal_of(&journal, None);
    assert_eq!(
        check(&journal, &unsigned, Some(&key.public())).finding,
        Finding::WrongKey {
            seal_line: 2,
            signer: None
        }
    );
    // A journal edited and its seal made again without the key: signed by someone else.
    let resealed = seal_of(&journal, Some(other));
    assert!(matches!(
        check(&journal, &resealed, Some(&key.public())).finding,
        Finding::WrongKey { seal_line: 2, .. }
    ));
    // A signed record edited (a count changed), its signature kept.
    let text = String::from_utf8(seal).unwrap();
    let edited = text.replacen("\"bytes\":", "\"bytes\":1", 1);
    assert_eq!(
        check(&journal, edited.as_bytes(), Some(&key.public())).finding,
        Finding::BadSignature { seal_line: 2 }
    );
}

#[test]
fn a_repair_record_keeps_the_chain_with_the_removed_lines_visible() {
    let journal = fixture("multi-turn/events.jsonl");
    let mut seal = seal_of(&journal, None);
    let all = lines(&journal);
    let kept: Vec<&[u8]> = all
        .iter()
        .enumerate()
        .filter(|(i, _)| ![3, 17].contains(i))
        .map(|(_, l)| *l)
        .collect();
    let repair = Record::Repair(Repair {
        action: RepairAction::Salvage,
        at: "2026-12-07T10:00:00.000Z".into(),
        removed: [3usize, 17]
            .iter()
            .map(|&i| Removed {
                sealed: i as u64 + 1,
                sha256: LineDigest::of(all[i])
                    .0
                    .iter()
                    .map(|b| format!("{b:02x}"))
                    .collect(),
            })
            .collect(),
        unsealed_lines: 0,
        unsealed_bytes: 0,
        lines: kept.len() as u64,
        bytes: joined(&kept).len() as u64,
        side_file: Some("events.jsonl.salvaged-x".into()),
        key: None,
        sig: None,
    });
    seal.extend(repair.to_line());
    let report = check(&joined(&kept), &seal, None);
    assert_eq!(report.finding, Finding::Intact);
    assert_eq!(report.repairs.len(), 1);
    // The repair does not launder another change: a third line gone is still missing.
    let mut fewer = kept.clone();
    fewer.remove(30);
    assert!(matches!(
        check(&joined(&fewer), &seal, None).finding,
        Finding::LinesMissing { .. }
    ));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Any byte of any line changed: the verification names that line, and no other.
    #[test]
    fn every_edited_line_is_named(line in 0usize..56, at in 0usize..10_000, byte in 0u8..=255) {
        let journal = fixture("multi-turn/events.jsonl");
        let seal = seal_of(&journal, None);
        let mut all: Vec<Vec<u8>> = lines(&journal).iter().map(|l| l.to_vec()).collect();
        let line = line % all.len();
        // Any byte but the newline (which would make two lines of one).
        let at = at % (all[line].len() - 1);
        prop_assume!(all[line][at] != byte && byte != b'\n');
        all[line][at] = byte;
        let offset: usize = all[..line].iter().map(Vec::len).sum();
        let edited: Vec<u8> = all.concat();
        prop_assert_eq!(
            check(&edited, &seal, None).finding,
            Finding::LineDiffers { line: line as u64 + 1, offset: offset as u64 }
        );
    }
}
