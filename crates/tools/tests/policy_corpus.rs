//! The permission policy on a corpus of commands and paths (`fixtures/policy/corpus.json`),
//! many of them written to slip past a naive reading: every row gets the decision it must.
//! Requests come from the real tools, in a real working directory (`/WORK` in a row stands
//! for it).

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use turnstile_permissions::{Decision, PermissionPolicy, Unasked};
use turnstile_tools::bash::BashTool;
use turnstile_tools::create::CreateTool;
use turnstile_tools::{Tool, ToolContext};

fn corpus() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/policy/corpus.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_owned())
        .collect()
}

fn name(d: &Decision) -> &'static str {
    match d {
        Decision::Approved => "approved",
        Decision::DeniedByRules(_) => "denied",
        Decision::NoApprovalRule { .. } => "no-rule",
        Decision::Ask => "ask",
    }
}

fn decide(policy: &PermissionPolicy, tool: &str, input: &str, cwd: &Path) -> Decision {
    let ctx = ToolContext::new(cwd);
    match tool {
        "bash" => {
            let ask = BashTool
                .permission(&json!({"command": input, "description": "d"}), &ctx)
                .unwrap()
                .unwrap();
            policy.decide(tool, &ask, cwd, false)
        }
        "create" => {
            let ask = CreateTool
                .permission(&json!({"path": input, "file_text": "x"}), &ctx)
                .unwrap()
                .unwrap();
            policy.decide(tool, &ask, cwd, false)
        }
        _ => {
            let paths = [PathBuf::from(input)];
            let denied = policy.denied_unasked(tool, Unasked::Builtin(&paths), cwd);
            if denied.is_empty() {
                Decision::Approved
            } else {
                Decision::DeniedByRules(denied)
            }
        }
    }
}

#[test]
fn every_row_gets_its_decision() {
    let work = tempfile::tempdir().unwrap();
    let cwd = work.path().canonicalize().unwrap();
    let corpus = corpus();
    let mut failures = Vec::new();
    let mut rows = 0;
    for group in corpus["groups"].as_array().unwrap() {
        let policy = PermissionPolicy::from_flags(
            group["allowAll"].as_bool().unwrap(),
            &strings(&group["allow"]),
            &strings(&group["deny"]),
        )
        .unwrap();
        let tool = group["tool"].as_str().unwrap();
        for case in group["cases"].as_array().unwrap() {
            rows += 1;
            let input = case[0]
                .as_str()
                .unwrap()
                .replace("/WORK", &cwd.display().to_string());
            let expected = case[1].as_str().unwrap();
            let got = decide(&policy, tool, &input, &cwd);
            if name(&got) != expected {
                failures.push(format!(
                    "[{}] {tool} {input:?}: expected {expected}, got {got:?}",
                    group["about"].as_str().unwrap()
                ));
            }
        }
    }
    assert!(rows >= 200, "only {rows} rows");
    assert!(
        failures.is_empty(),
        "{} of {rows} rows wrong:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
