//! `turnstile verify`: whether a journal is exactly what its writer wrote, by its seal.

use std::io::BufReader;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use serde_json::{Value, json};
use turnstile_journal::seal_file::seal_path;
use turnstile_journal::session_dir::open_read_nofollow;
use turnstile_seal::{Finding, Report, VerifyKey, verify};

/// The exit codes of `turnstile verify`.
pub const EXIT_CODES: &str = "\
Exit codes:
  0  intact: every line is the line sealed there, and there is no other (repairs and adopted lines are shown)
  1  the journal differs from its seal: a line changed, lines missing, reordered, a missing tail
  2  error: bad arguments, unreadable file, unknown session, unreadable key
  3  the seal cannot be trusted: edited, a bad signature, or not signed by the --key given
  4  intact so far, then lines no checkpoint covers yet (a writer running, or one that stopped before its turn ended)
  5  the journal has no seal";

/// Arguments of `turnstile verify`.
#[derive(Debug, Clone, Args)]
pub struct VerifyArgs {
    /// A session id, a unique id prefix, a session directory or an events.jsonl path.
    #[arg(default_value = "", hide_default_value = true)]
    pub target: String,
    /// The most recently updated session, instead of naming one.
    #[arg(long, conflicts_with = "target")]
    pub last: bool,
    /// Every record must be signed by this key: a public key file (`*.pub`) or the key file.
    #[arg(long, value_name = "FILE")]
    pub key: Option<PathBuf>,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

/// What is verified, as the report names it.
struct Named {
    /// The journal (a path, or the session on the store).
    journal: Value,
    /// Its seal (a path, or the stored seal's subject).
    seal: Value,
    /// The journal in the text report.
    label: String,
    /// The sentence for a journal without a seal.
    no_seal: String,
}

fn key_of(args: &VerifyArgs) -> Result<Option<VerifyKey>> {
    match &args.key {
        Some(path) => {
            Ok(Some(VerifyKey::from_file(path).with_context(|| {
                format!("cannot use the key {}", path.display())
            })?))
        }
        None => Ok(None),
    }
}

/// Verifies the session's journal against its seal.
pub fn run(args: &VerifyArgs, state_dir: Option<&std::path::Path>) -> Result<ExitCode> {
    let paths = crate::target::resolve(&args.target, state_dir)?;
    paths.check_events_file()?;
    let key = key_of(args)?;
    let seal_file = seal_path(&paths.events);
    let named = Named {
        journal: json!(paths.events),
        seal: json!(seal_file),
        label: paths.events.display().to_string(),
        no_seal: format!(
            "no seal ({} does not exist); a journal is sealed by turnstile's writer from its next append on",
            seal_file.display()
        ),
    };
    verify_files(args, key.as_ref(), &paths.events, &seal_file, &named)
}

/// Verifies a session of the JetStream store: the journal and the seal as the store holds
/// them (the seal read first, then the journal, into a scratch copy; a writer still running
/// shows as an unsealed tail, never as a missing one).
pub fn run_stored(args: &VerifyArgs, config: turnstile_store_nats::NatsConfig) -> Result<ExitCode> {
    let key = key_of(args)?;
    let named = |id: turnstile_journal::Uuid| Named {
        journal: json!({"store": config.url, "stream": config.stream, "session": id}),
        seal: json!({"stream": config.seal_stream(), "subject": config.seal_subject(id)}),
        label: format!("session {id} on {}", config.url),
        no_seal: format!(
            "no seal in the store (subject {} of stream {} is empty): the session was written before the store kept seals, or imported without one; its next writer seals it from then on",
            config.seal_subject(id),
            config.seal_stream()
        ),
    };
    let copy =
        crate::store::with_stored_copy(config.clone(), &args.target, async |copy| Ok(copy.id))?;
    let seal_file = seal_path(&copy.paths.events);
    verify_files(
        args,
        key.as_ref(),
        &copy.paths.events,
        &seal_file,
        &named(copy.value),
    )
}

fn verify_files(
    args: &VerifyArgs,
    key: Option<&VerifyKey>,
    events: &std::path::Path,
    seal_file: &std::path::Path,
    named: &Named,
) -> Result<ExitCode> {
    // Read without following a link, as every reader of a session does.
    let journal =
        open_read_nofollow(events).with_context(|| format!("cannot read {}", named.label))?;
    let seal = match open_read_nofollow(seal_file) {
        Ok(seal) => seal,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if args.json {
                println!(
                    "{}",
                    json!({"journal": named.journal, "seal": named.seal, "finding": {"kind": "no-seal"}})
                );
            } else {
                println!("{}: {}", named.label, named.no_seal);
            }
            return Ok(ExitCode::from(5));
        }
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", seal_file.display())),
    };
    let report = verify(
        BufReader::with_capacity(1 << 20, journal),
        BufReader::new(seal),
        key,
    )
    .with_context(|| format!("cannot verify {}", named.label))?;
    if args.json {
        let mut out = report_json(&report);
        out["journal"] = named.journal.clone();
        out["seal"] = named.seal.clone();
        println!("{out}");
    } else {
        print_report(&named.label, &report, key.is_some());
    }
    Ok(ExitCode::from(exit_code(&report.finding)))
}

fn exit_code(finding: &Finding) -> u8 {
    match finding {
        Finding::Intact => 0,
        Finding::LineDiffers { .. }
        | Finding::LinesMissing { .. }
        | Finding::Reordered { .. }
        | Finding::MissingTail { .. }
        | Finding::RemovedLineDiffers { .. } => 1,
        Finding::SealEdited { .. } | Finding::BadSignature { .. } | Finding::WrongKey { .. } => 3,
        Finding::UnsealedTail { .. } => 4,
    }
}

/// The finding in one sentence.
fn describe(finding: &Finding) -> String {
    match finding {
        Finding::Intact => {
            "intact: every line is the line its writer sealed, and there is no other".into()
        }
        Finding::UnsealedTail {
            first_line,
            lines,
            bytes,
        } => format!(
            "every sealed line is intact; lines {first_line}.. ({lines} line(s), {bytes} bytes) are not sealed yet (a writer running, or one that stopped before its turn ended: the next writer adopts them)"
        ),
        Finding::LineDiffers { line, offset } => format!(
            "line {line} (byte {offset}) is not the line sealed there: it was changed or inserted after it was written"
        ),
        Finding::LinesMissing {
            line,
            offset,
            first_missing,
            count,
        } => format!(
            "{count} line(s) sealed as line {first_missing} onwards are missing: line {line} (byte {offset}) is the one sealed after them"
        ),
        Finding::Reordered {
            line,
            offset,
            sealed_as,
            now_at,
        } => format!(
            "the lines were reordered: line {line} (byte {offset}) was sealed as line {sealed_as}{}",
            now_at
                .map(|n| format!(", and the line sealed at {line} is now line {n}"))
                .unwrap_or_default()
        ),
        Finding::MissingTail {
            lines,
            sealed_lines,
        } => format!(
            "the tail is missing: the journal holds {lines} whole line(s), the seal covers {sealed_lines}"
        ),
        Finding::RemovedLineDiffers { seal_line, sealed } => format!(
            "the repair recorded at seal line {seal_line} removed sealed line {sealed}, which had been changed after it was sealed"
        ),
        Finding::SealEdited { seal_line, message } => {
            format!("the seal was edited (seal line {seal_line}): {message}")
        }
        Finding::BadSignature { seal_line } => format!(
            "the signature of seal line {seal_line} does not match the record: the record was changed after it was signed"
        ),
        Finding::WrongKey {
            seal_line,
            signer: Some(signer),
        } => format!("seal line {seal_line} is signed by key {signer}, not by the key given"),
        Finding::WrongKey {
            seal_line,
            signer: None,
        } => format!("seal line {seal_line} is not signed, and a key was given"),
    }
}

fn print_report(journal: &str, report: &Report, keyed: bool) {
    println!("{journal}: {}", describe(&report.finding));
    let signed = match (report.signers.as_slice(), report.unsigned, keyed) {
        ([], _, _) => "unsigned".to_owned(),
        ([one], 0, true) => format!("signed by the key given ({one})"),
        ([one], 0, false) => {
            format!("signed by {one} (not checked against a key you hold: pass --key)")
        }
        (many, unsigned, _) => format!(
            "signed by {} key(s), {unsigned} record(s) unsigned",
            many.len()
        ),
    };
    println!(
        "  sealed lines: {} in {} checkpoint(s); {signed}; chain {}",
        report.sealed, report.checkpoints, report.chain
    );
    for (first, last) in &report.adopted {
        println!(
            "  adopted: sealed lines {first}-{last} were in the journal when a writer opened it, not sealed as they were written"
        );
    }
    for seen in &report.repairs {
        let r = &seen.repair;
        println!(
            "  repair at {} (seal line {}): {}, {} sealed line(s) removed{}, {} unsealed line(s) and {} unsealed byte(s) removed{}",
            r.at,
            seen.seal_line,
            match r.action {
                turnstile_seal::RepairAction::CutTail => "torn tail cut",
                turnstile_seal::RepairAction::Salvage => "bad lines salvaged",
            },
            r.removed.len(),
            if r.removed.is_empty() {
                String::new()
            } else {
                format!(
                    " ({})",
                    r.removed
                        .iter()
                        .map(|x| x.sealed.to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            },
            r.unsealed_lines,
            r.unsealed_bytes,
            r.side_file
                .as_deref()
                .map(|s| format!(", kept in {s}"))
                .unwrap_or_default()
        );
    }
    if report.torn_seal_bytes > 0 {
        println!(
            "  the seal's last record is torn ({} bytes): a write cut short, not counted",
            report.torn_seal_bytes
        );
    }
}

fn report_json(report: &Report) -> Value {
    let finding = match &report.finding {
        Finding::Intact => json!({"kind": "intact"}),
        Finding::UnsealedTail {
            first_line,
            lines,
            bytes,
        } => {
            json!({"kind": "unsealed-tail", "firstLine": first_line, "lines": lines, "bytes": bytes})
        }
        Finding::LineDiffers { line, offset } => {
            json!({"kind": "line-differs", "line": line, "offset": offset})
        }
        Finding::LinesMissing {
            line,
            offset,
            first_missing,
            count,
        } => {
            json!({"kind": "lines-missing", "line": line, "offset": offset, "firstMissing": first_missing, "count": count})
        }
        Finding::Reordered {
            line,
            offset,
            sealed_as,
            now_at,
        } => {
            json!({"kind": "reordered", "line": line, "offset": offset, "sealedAs": sealed_as, "nowAt": now_at})
        }
        Finding::MissingTail {
            lines,
            sealed_lines,
        } => json!({"kind": "missing-tail", "lines": lines, "sealedLines": sealed_lines}),
        Finding::RemovedLineDiffers { seal_line, sealed } => {
            json!({"kind": "removed-line-differs", "sealLine": seal_line, "sealed": sealed})
        }
        Finding::SealEdited { seal_line, message } => {
            json!({"kind": "seal-edited", "sealLine": seal_line, "message": message})
        }
        Finding::BadSignature { seal_line } => {
            json!({"kind": "bad-signature", "sealLine": seal_line})
        }
        Finding::WrongKey { seal_line, signer } => {
            json!({"kind": "wrong-key", "sealLine": seal_line, "signer": signer})
        }
    };
    let mut finding = finding;
    finding["message"] = json!(describe(&report.finding));
    json!({
        "finding": finding,
        "sealed": report.sealed,
        "checkpoints": report.checkpoints,
        "chain": report.chain,
        "signers": report.signers,
        "unsignedRecords": report.unsigned,
        "adopted": report.adopted.iter().map(|(a, b)| json!({"first": a, "last": b})).collect::<Vec<_>>(),
        "repairs": report.repairs.iter().map(|s| json!({
            "sealLine": s.seal_line,
            "record": serde_json::to_value(turnstile_seal::Record::Repair(s.repair.clone())).unwrap_or(Value::Null),
        })).collect::<Vec<_>>(),
        "tornSealBytes": report.torn_seal_bytes,
    })
}
