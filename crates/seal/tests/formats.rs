//! Seals of every format verify: those of format 1, written by the code that wrote format 1
//! (`fixtures/seal-v1/`), as they did, signatures included; a new seal is in the current
//! format, whose checkpoints leave the lines count out and spell the chain in base64.

use serde_json::Value;
use turnstile_seal::{Finding, Format, SealKey};

use crate::verify::{check, fixture, lines, seal_of};

/// The records of a seal, as JSON.
fn records(seal: &[u8]) -> Vec<Value> {
    String::from_utf8(seal.to_vec())
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn seals_written_in_format_1_still_verify() {
    let journal = fixture("multi-turn/events.jsonl");
    let plain = fixture("seal-v1/multi-turn.events.jsonl.seal");
    assert_eq!(records(&plain)[0]["format"], Format::V1.name());
    let report = check(&journal, &plain, None);
    assert_eq!(report.finding, Finding::Intact);
    assert_eq!(report.sealed, lines(&journal).len() as u64);
    // The chain is the same in every format: a new seal of the lines ends where the old did.
    let new = check(&journal, &seal_of(&journal, None), None);
    assert_eq!(
        (report.chain.as_str(), report.checkpoints),
        (new.chain.as_str(), new.checkpoints)
    );
    // A line edited is named.
    let mut edited: Vec<Vec<u8>> = lines(&journal).iter().map(|l| l.to_vec()).collect();
    edited[9][2] ^= 1;
    assert!(matches!(
        check(&edited.concat(), &plain, None).finding,
        Finding::LineDiffers { line: 10, .. }
    ));

    let key = SealKey::from_seed([7; 32]);
    let signed = fixture("seal-v1/multi-turn.signed.events.jsonl.seal");
    let report = check(&journal, &signed, Some(&key.public()));
    assert_eq!(report.finding, Finding::Intact);
    assert_eq!(report.signers, vec![key.public().to_base64()]);
    // A signed record edited (a count changed), its signature kept.
    let text = String::from_utf8(signed).unwrap();
    let edited = text.replacen("\"lines\":", "\"lines\":1", 1);
    assert_eq!(
        check(&journal, edited.as_bytes(), Some(&key.public())).finding,
        Finding::BadSignature { seal_line: 2 }
    );
}

#[test]
fn a_new_seal_is_in_the_current_format_and_smaller_than_one_of_format_1() {
    let journal = fixture("multi-turn/events.jsonl");
    let seal = seal_of(&journal, None);
    let records = records(&seal);
    assert_eq!(records[0]["format"], Format::CURRENT.name());
    for checkpoint in &records[1..] {
        assert!(checkpoint.get("lines").is_none(), "{checkpoint}");
        assert_eq!(checkpoint["chain"].as_str().map(str::len), Some(43));
    }
    let old = fixture("seal-v1/multi-turn.events.jsonl.seal");
    assert!(seal.len() < old.len(), "{} < {}", seal.len(), old.len());
    // A checkpoint of the current format that names its lines is not one a writer wrote.
    let text = String::from_utf8(seal).unwrap();
    let named = text.replacen("\"bytes\":", "\"lines\":1,\"bytes\":", 1);
    assert!(matches!(
        check(&journal, named.as_bytes(), None).finding,
        Finding::SealEdited { seal_line: 2, .. }
    ));
}
