//! Fuzzing the shell analysis and the policy on it: arbitrary text, shell-flavoured text and
//! deliberately pathological lines never panic, and what cannot be read is never approved by
//! a narrow rule. `make fuzz` runs many more cases (`PROPTEST_CASES`).

use std::path::Path;

use proptest::prelude::*;
use turnstile_permissions::PermissionAsk;
use turnstile_permissions::shell::{MAX_COMMAND_BYTES, analyze};
use turnstile_permissions::{Decision, PermissionPolicy};

fn ask(line: &str) -> PermissionAsk {
    PermissionAsk {
        kind: turnstile_permissions::PermissionKind::Shell,
        request: serde_json::json!({}),
        intention: String::new(),
        subject: line.to_owned(),
        shell: Some(std::sync::Arc::new(analyze(line))),
    }
}

fn policies() -> Vec<PermissionPolicy> {
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    vec![
        PermissionPolicy::from_flags(false, &s(&["shell(git)", "write(out/**)"]), &[]).unwrap(),
        PermissionPolicy::from_flags(true, &[], &s(&["shell(rm)", "write(src/**)"])).unwrap(),
    ]
}

/// Runs the analysis and every policy on `line`; checks what must hold whatever it is.
fn check(line: &str) -> Result<(), TestCaseError> {
    let analysis = analyze(line);
    let ask = ask(line);
    for policy in policies() {
        let d = policy.decide("bash", &ask, Path::new("/w"), false);
        if !analysis.is_resolved() {
            prop_assert!(
                d != Decision::Approved
                    || policy.allow_all
                        && policy.deny.iter().all(|p| !p.as_str().starts_with("shell"))
            );
        }
        let _ = d.hint();
    }
    Ok(())
}

/// Characters that mean something to bash, and a few that do not.
const SHELLISH: &[&str] = &[
    " ", "\t", "\n", "\\", "'", "\"", "$", "(", ")", "{", "}", "[", "]", "`", "<", ">", "|", "&",
    ";", "#", "*", "?", "=", "+", "-", "!", "@", ":", ",", ".", "/", "0", "2", "x", "é", "git",
    "rm", "env", "bash -c ", "sudo ", "xargs ", "$'", "<<EOF\n", "\nEOF\n", "$((", "${", "$(",
    "<(", "eval ", "exec ", "-c", "=", "EOF", "{fd}>", "time -p ", "env -S", "-u", "--", "git -c ",
    "for x do", "declare ", "-n ", "\\0", "\\c", "\\x", "set -", "shopt ", "rbash ",
];

proptest! {
    #[test]
    fn arbitrary_text_never_panics(line in any::<String>()) {
        check(&line)?;
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        check(&String::from_utf8_lossy(&bytes))?;
    }

    #[test]
    fn shellish_text_never_panics(parts in proptest::collection::vec(proptest::sample::select(SHELLISH), 0..64)) {
        check(&parts.concat())?;
    }
}

#[test]
fn pathological_lines_finish() {
    let n = 20_000;
    for line in [
        "$(".repeat(n),
        "${".repeat(n),
        "$((".repeat(n),
        "((".repeat(n),
        "(".repeat(n),
        "`".repeat(n),
        "'".repeat(n + 1),
        "\\".repeat(n),
        "bash -c ".repeat(n),
        "env ".repeat(n) + "x",
        "a;".repeat(n),
        (0..n).map(|i| format!("c{i};")).collect::<String>(),
        "echo >a ".repeat(n),
        format!("cat <<EOF\n{}\nEOF", "$((x ".repeat(n)),
        format!("{}\n", "cat <<A ".repeat(n)),
        "x".repeat(MAX_COMMAND_BYTES + 1),
    ] {
        check(&line).unwrap();
    }
    // Past the size limit nothing is read, and nothing narrow approves it.
    assert!(!analyze(&"x".repeat(MAX_COMMAND_BYTES + 1)).is_resolved());
}
