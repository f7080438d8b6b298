//! The policy against real bash: commands generated from a grammar of quoting, wrappers,
//! builtins that run programs (`exec`, `command`, `eval`, `source`), substitutions and
//! compositions are decided under random `shell(NAME)` rules, and every approved one runs in a
//! real `bash` whose `PATH` holds only recording stubs (each appends its name to a log; the
//! wrappers then run the real wrapper). The programs that actually ran must be ones the
//! policy saw and allowed; under `--allow-all-tools --deny-tool shell(NAME)` an approved
//! command must never run NAME.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use proptest::prelude::*;
use serde_json::json;
use turnstile_permissions::{Decision, PermissionPolicy};
use turnstile_tools::bash::BashTool;
use turnstile_tools::{Tool, ToolContext};

/// Programs that only record themselves.
const PLAIN: &[&str] = &[
    "git", "ls", "touch", "rm", "cat", "mkdir", "grep", "wc", "sleep", "printenv", "curl", "wget",
    "make",
];
/// Wrappers: record themselves, then run the real program with the same arguments.
const WRAPPERS: &[(&str, &str)] = &[
    ("env", "/usr/bin/env"),
    ("nice", "/usr/bin/nice"),
    ("timeout", "/usr/bin/timeout"),
    ("xargs", "/usr/bin/xargs"),
    ("bash", "/bin/bash"),
    ("sh", "/bin/bash"),
];

struct Stubs {
    _dir: tempfile::TempDir,
    bin: PathBuf,
}

fn stubs() -> &'static Stubs {
    static STUBS: OnceLock<Stubs> = OnceLock::new();
    STUBS.get_or_init(|| {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        let write = |name: &str, body: String| {
            let path = bin.join(name);
            std::fs::write(&path, body).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        };
        for name in PLAIN {
            write(
                name,
                format!("#!/bin/bash\necho {name} \"$@\" >> \"$LOG\"\n"),
            );
        }
        for (name, real) in WRAPPERS {
            write(
                name,
                format!("#!/bin/bash\necho {name} >> \"$LOG\"\nexec {real} \"$@\"\n"),
            );
        }
        Stubs { _dir: dir, bin }
    })
}

/// Every name a rule may allow.
fn names() -> Vec<&'static str> {
    let mut v: Vec<&str> = PLAIN[..5].to_vec();
    v.extend(WRAPPERS.iter().map(|(n, _)| *n));
    v.extend(["echo", "true", "command", "exec", "eval", "source"]);
    v
}

/// Builds a command line from a stream of random choices.
struct Gen<'a> {
    picks: &'a [u32],
    at: usize,
}

impl Gen<'_> {
    fn pick(&mut self, n: usize) -> usize {
        let v = self.picks.get(self.at).copied().unwrap_or(0);
        self.at += 1;
        v as usize % n
    }

    fn program(&mut self) -> String {
        let all = names();
        let name = all[self.pick(all.len())];
        match self.pick(9) {
            0 => format!("'{name}'"),
            1 => format!("\"{name}\""),
            2 => format!("\\{name}"),
            3 => {
                let hex: String = name.bytes().map(|b| format!("\\x{b:02x}")).collect();
                format!("$'{hex}'")
            }
            4 => format!("{}/{name}", stubs().bin.display()),
            5 => format!("X=1 {name}"),
            6 => format!("V={name}; $V"),
            7 => {
                let (a, b) = name.split_at(1);
                format!("{a}\"{b}\"")
            }
            _ => name.to_owned(),
        }
    }

    fn simple(&mut self, depth: usize) -> String {
        let arg = ["", " a", " -n 1", " \"$HOME\"", " 'x y'"][self.pick(5)];
        if depth > 2 {
            return format!("{}{arg}", self.program());
        }
        let inner = self.simple(depth + 1);
        match self.pick(14) {
            0 => format!("env {inner}"),
            1 => format!("env -i A=1 {inner}"),
            2 => format!("nice -n 5 {inner}"),
            3 => format!("timeout 5 {inner}"),
            4 => format!("command {inner}"),
            5 => format!("exec {inner}"),
            6 => format!("echo a | xargs {inner}"),
            7 if !inner.contains('\'') => format!("bash -c '{inner}'"),
            8 => format!("eval \"{}\"", inner.replace(['"', '$', '\\'], "")),
            9 => format!("echo $({inner})"),
            10 => format!("cat <<EOF\n$({inner})\nEOF\n"),
            11 => format!("cat <<'EOF'\n$({inner})\nEOF\n"),
            12 => format!("printf '%s\\n' {} > s.sh; source s.sh", self.program()),
            _ => format!("{}{arg}", self.program()),
        }
    }

    fn line(&mut self) -> String {
        let mut line = self.simple(0);
        for _ in 0..self.pick(3) {
            let op = [" ; ", " && ", " || ", " | ", " & ", "\n"][self.pick(6)];
            let next = self.simple(0);
            line = format!("{line}{op}{next}");
        }
        match self.pick(4) {
            0 => format!("( {line} )"),
            1 => format!("{{ {line}\n}}"),
            _ => line,
        }
    }
}

/// Runs `line` in bash with only the stubs on PATH; returns the programs that ran.
fn run(line: &str) -> BTreeSet<String> {
    invocations(line)
        .into_iter()
        .filter_map(|w| w.into_iter().next())
        .collect()
}

/// Runs `line` like [`run`]; returns each stub's name and arguments.
fn invocations(line: &str) -> Vec<Vec<String>> {
    let work = tempfile::tempdir().unwrap();
    let log = work.path().join("log");
    std::fs::write(&log, "").unwrap();
    // Output is read to its end: every process of the line, background jobs included, holds
    // the pipe until it exits, so the log is complete once it closes.
    Command::new("/bin/bash")
        .arg("-c")
        .arg(line)
        .current_dir(work.path())
        .env_clear()
        .env("PATH", &stubs().bin)
        .env("LOG", &log)
        .env("HOME", work.path())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| l.split_whitespace().map(str::to_owned).collect())
        .collect()
}

fn decide(policy: &PermissionPolicy, line: &str, cwd: &Path) -> (Decision, BTreeSet<String>) {
    let ask = BashTool
        .permission(
            &json!({"command": line, "description": "d"}),
            &ToolContext::new(cwd),
        )
        .unwrap()
        .unwrap();
    let seen = ask
        .shell
        .as_ref()
        .unwrap()
        .commands
        .iter()
        .map(|c| c.name.clone())
        .collect();
    (policy.decide("bash", &ask, cwd, false), seen)
}

/// Checks one line under `shell(NAME)` rules for the names in `mask`; returns whether the
/// policy approved it.
fn check_allow(picks: &[u32], mask: u32) -> Result<bool, String> {
    let line = Gen { picks, at: 0 }.line();
    let allowed: BTreeSet<String> = names()
        .iter()
        .enumerate()
        .filter(|(i, _)| mask & (1 << i) != 0)
        .map(|(_, n)| n.to_string())
        .collect();
    let rules: Vec<String> = allowed.iter().map(|n| format!("shell({n})")).collect();
    let policy = PermissionPolicy::from_flags(false, &rules, &[]).unwrap();
    let (decision, seen) = decide(&policy, &line, &std::env::temp_dir());
    if decision != Decision::Approved {
        return Ok(false);
    }
    for program in run(&line) {
        if !allowed.contains(&program) {
            return Err(format!("{line:?} ran {program} (allowed {allowed:?})"));
        }
        if !seen.contains(&program) {
            return Err(format!(
                "{line:?} ran {program}, unseen by the analysis ({seen:?})"
            ));
        }
    }
    Ok(true)
}

/// Checks one line under `--allow-all-tools --deny-tool shell(NAME)`.
fn check_deny(picks: &[u32], which: usize) -> Result<bool, String> {
    let line = Gen { picks, at: 0 }.line();
    let all = names();
    let denied = all[which % all.len()];
    let policy = PermissionPolicy::from_flags(true, &[], &[format!("shell({denied})")]).unwrap();
    let (decision, _) = decide(&policy, &line, &std::env::temp_dir());
    if decision != Decision::Approved {
        return Ok(false);
    }
    if run(&line).contains(denied) {
        return Err(format!("{line:?} ran the denied {denied}"));
    }
    Ok(true)
}

/// Fragments of shell text, most of them meaningful to bash, for random soups.
const SOUP: &[&str] = &[
    " ",
    "\n",
    "\\",
    "'",
    "\"",
    "$",
    "(",
    ")",
    "{",
    "}",
    "[",
    "]",
    "`",
    "<",
    ">",
    "|",
    "&",
    ";",
    "#",
    "*",
    "=",
    "!",
    ":",
    ",",
    "touch f",
    "t",
    "ouch",
    " f",
    "EOF",
    "<<EOF\n",
    "<<'EOF'\n",
    "\nEOF\n",
    "X=",
    "$X",
    "echo ",
    "env ",
    "bash -c ",
    "eval ",
    "exec ",
    "-",
    "x",
    "((",
    "))",
    "${",
    "$(",
    "<(",
    ";;",
    "case ",
    " in ",
    "esac",
    "for ",
    "do ",
    "done",
    "if ",
    "then ",
    "fi",
    "\\\n",
    "$'",
    "\\x74",
    "declare ",
    "-a ",
    "-i ",
    "a[",
    "0",
    "1",
    "%",
    "^",
    "~",
    "@",
    "?",
];

proptest! {
    #[test]
    fn random_text_approved_under_a_deny_rule_never_runs_it(
        parts in proptest::collection::vec(proptest::sample::select(SOUP), 0..24),
    ) {
        // Not a grammar: any text at all that the policy approves must not run `touch`.
        let line = parts.concat();
        prop_assume!(!line.trim().is_empty());
        let policy = PermissionPolicy::from_flags(true, &[], &["shell(touch)".into()]).unwrap();
        let (decision, _) = decide(&policy, &line, &std::env::temp_dir());
        if decision == Decision::Approved {
            prop_assert!(!run(&line).contains("touch"), "{line:?} ran touch");
        }
    }

    #[test]
    fn approved_commands_run_only_allowed_programs(
        picks in proptest::collection::vec(any::<u32>(), 40),
        mask in any::<u32>(),
    ) {
        check_allow(&picks, mask).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn approved_commands_never_run_a_denied_program(
        picks in proptest::collection::vec(any::<u32>(), 40),
        which in any::<usize>(),
    ) {
        check_deny(&picks, which).map_err(TestCaseError::fail)?;
    }
}

#[test]
fn the_generator_reaches_approved_commands() {
    // The properties say nothing if nothing is approved: a fixed sample must get approvals
    // under both kinds of policy (and pass the same checks).
    let mut seed = 0x2545_f491_u64;
    let mut next = || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) as u32
    };
    let (mut allowed, mut denied) = (0, 0);
    for _ in 0..200 {
        let picks: Vec<u32> = (0..40).map(|_| next()).collect();
        // Most names allowed, so that whole lines get approved.
        let mask = next() | next() | next();
        allowed += usize::from(check_allow(&picks, mask).unwrap());
        denied += usize::from(check_deny(&picks, next() as usize).unwrap());
    }
    eprintln!("approved of 200: {allowed} under allow rules, {denied} under a deny rule");
    assert!(
        allowed >= 20,
        "only {allowed} of 200 approved under allow rules"
    );
    assert!(
        denied >= 20,
        "only {denied} of 200 approved under a deny rule"
    );
}

#[test]
fn the_harness_sees_programs_run() {
    // The property above is only as good as the stubs: they must record what runs.
    let ran = run("env nice touch f; X=1 git; bash -c 'ls'; echo a | xargs rm");
    let expected: BTreeSet<String> = ["env", "nice", "touch", "git", "bash", "ls", "xargs", "rm"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(ran, expected);
}

/// The words of each `shell(...)` rule among `patterns`.
fn rule_words(patterns: &[String]) -> Vec<Vec<String>> {
    patterns
        .iter()
        .filter_map(|p| p.strip_prefix("shell(").or_else(|| p.strip_prefix("bash(")))
        .map(|rest| {
            let inner = rest.trim_end_matches(')').trim_end_matches(":*");
            inner.split_whitespace().map(str::to_owned).collect()
        })
        .collect()
}

/// Whether an invocation is what `rule` names: the program, then (for a longer rule) the
/// rule's words as its first words that are not options.
fn invokes(invocation: &[String], rule: &[String]) -> bool {
    let Some((program, args)) = invocation.split_first() else {
        return false;
    };
    if rule.first() != Some(program) {
        return false;
    }
    let words: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
    rule[1..].iter().zip(&words).all(|(r, w)| r == *w) && words.len() >= rule.len() - 1
}

#[test]
fn the_corpus_approvals_hold_under_real_bash() {
    // Every shell command the corpus says is approved under narrow rules runs in real bash:
    // under deny rules no denied program may run, under allow rules only allowed ones.
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/policy/corpus.json");
    let corpus: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let strings = |v: &serde_json::Value| -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap().to_owned())
            .collect()
    };
    let mut checked = 0;
    for group in corpus["groups"].as_array().unwrap() {
        let allow_all = group["allowAll"].as_bool().unwrap();
        let (allow, deny) = (strings(&group["allow"]), strings(&group["deny"]));
        let (allowed, denied) = (rule_words(&allow), rule_words(&deny));
        let narrow = if allow_all {
            !denied.is_empty()
        } else {
            !allowed.is_empty()
        };
        // Groups about file writes are not run: their commands write where they say.
        if group["tool"] != "bash"
            || !narrow
            || allow.iter().chain(&deny).any(|p| p.starts_with("write"))
        {
            continue;
        }
        let policy = PermissionPolicy::from_flags(allow_all, &allow, &deny).unwrap();
        for case in group["cases"].as_array().unwrap() {
            let line = case[0].as_str().unwrap();
            if decide(&policy, line, &std::env::temp_dir()).0 != Decision::Approved {
                continue;
            }
            checked += 1;
            for call in invocations(line) {
                if allow_all {
                    let hit = denied.iter().find(|r| invokes(&call, r));
                    assert!(hit.is_none(), "{line:?} ran {call:?}, denied by {hit:?}");
                } else {
                    let ok = allowed.iter().any(|r| invokes(&call, r));
                    assert!(ok, "{line:?} ran {call:?}, not allowed by {allowed:?}");
                }
            }
        }
    }
    assert!(checked >= 50, "only {checked} approved rows run");
}
