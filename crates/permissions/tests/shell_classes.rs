//! Kinds of command lines that were once approved, or read with the wrong program, checked by
//! their effects: each line runs in a real bash (in a directory of its own) to show what it
//! does there, a file it creates or a directory it removes, and the policy must refuse it
//! (deny it under a deny rule of the program that did it, and not approve it under allow rules
//! that name only what a naive reading sees).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use turnstile_permissions::shell::analyze;
use turnstile_permissions::{Decision, PermissionAsk, PermissionKind, PermissionPolicy};

/// A directory of its own for one run, removed afterwards.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!(
            "turnstile-shell-classes-{}-{n}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs `script` with `bash -c` in `dir` (HOME there, one positional parameter, no input).
fn bash(dir: &Path, script: &str) {
    Command::new("bash")
        .arg("-c")
        .arg(script)
        .arg("bash")
        .arg("1")
        .current_dir(dir)
        .env("HOME", dir)
        .env_remove("BASH_ENV")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
}

fn decide(allow: &[&str], deny: &[&str], line: &str) -> Decision {
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let policy = PermissionPolicy::from_flags(allow.is_empty(), &s(allow), &s(deny)).unwrap();
    let ask = PermissionAsk {
        kind: PermissionKind::Shell,
        request: serde_json::json!({}),
        intention: String::new(),
        subject: line.to_owned(),
        shell: Some(Arc::new(analyze(line))),
    };
    policy.decide("bash", &ask, Path::new("/w"), false)
}

/// `line` (after `setup`) creates `m` in bash, and the policy denies it under
/// `--allow-all-tools --deny-tool 'shell(PROGRAM)'`.
#[track_caller]
fn denied_and_runs(setup: &str, line: &str, program: &str) {
    let dir = Scratch::new();
    bash(dir.path(), setup);
    bash(dir.path(), line);
    assert!(
        dir.path().join("m").exists(),
        "{line:?} should create m in bash"
    );
    let rule = format!("shell({program})");
    let d = decide(&[], &[&rule], line);
    assert!(
        matches!(d, Decision::DeniedByRules(_)),
        "{line:?} under --deny-tool {rule}: {d:?}"
    );
}

/// `line` (after `setup`) creates `m` in bash, and `allow` rules do not approve it.
#[track_caller]
fn refused_and_runs(setup: &str, line: &str, allow: &[&str]) {
    let dir = Scratch::new();
    bash(dir.path(), setup);
    bash(dir.path(), line);
    assert!(
        dir.path().join("m").exists(),
        "{line:?} should create m in bash"
    );
    let d = decide(allow, &[], line);
    assert!(
        matches!(d, Decision::NoApprovalRule { .. }),
        "{line:?} under {allow:?}: {d:?}"
    );
}

#[test]
fn named_descriptor_redirects() {
    denied_and_runs("", "{fd}>/dev/null touch m", "touch");
    denied_and_runs("", "{fd}>/dev/null {g}>&2 touch m", "touch");
}

#[test]
fn time_options() {
    denied_and_runs("", "time -- touch m", "touch");
    denied_and_runs("", "time -p touch m", "touch");
    denied_and_runs("", "time -p -- touch m", "touch");
}

#[test]
fn quotes_in_parameter_expansions() {
    let line = "echo ${X:-'}'} ; touch m ; # '";
    refused_and_runs("", line, &["shell(echo)"]);
    denied_and_runs("", line, "touch");
    refused_and_runs("", "echo \"${X:-'}'}\" ; touch m ; # '", &["shell(echo)"]);
    refused_and_runs("", "echo ${X:-$'\\''} ; touch m ; # '", &["shell(echo)"]);
}

#[test]
fn a_nul_in_ansi_c_quotes_cuts_the_word() {
    for line in [
        "$'rm\\0dir' -rf d",
        "$'rm\\x00dir' -rf d",
        "$'rm\\000dir' -rf d",
        "$'rm\\c@dir' -rf d",
        "$'rm\\u0000dir' -rf d",
    ] {
        let dir = Scratch::new();
        bash(dir.path(), "mkdir -p d/e && touch d/e/f");
        bash(dir.path(), line);
        assert!(
            !dir.path().join("d").exists(),
            "{line:?} runs rm -rf in bash"
        );
        let d = decide(&["shell(rmdir)"], &[], line);
        assert!(
            matches!(d, Decision::NoApprovalRule { .. }),
            "{line:?}: {d:?}"
        );
        let d = decide(&[], &["shell(rm)"], line);
        assert!(matches!(d, Decision::DeniedByRules(_)), "{line:?}: {d:?}");
    }
    // The closing quote is found before the escapes are read: `\c'` is not control-quote.
    denied_and_runs("", "echo $'\\c' ; touch m\n#'", "touch");
}

#[test]
fn for_loops_without_in() {
    denied_and_runs("", "for x do touch m; done", "touch");
    denied_and_runs("", "for x; do touch m; done", "touch");
    denied_and_runs("", "for x\n{ touch m; }", "touch");
}

#[test]
fn env_arguments() {
    for line in [
        "env -- A=1 touch m",
        "env - A=1 touch m",
        "env -S 'touch m'",
        "env -S'touch m'",
        "env -S '-i A=1 touch' m",
        "env -S '# comment' touch m",
        "env -u HOME touch m",
        "env -iu HOME touch m",
        "env -i touch m",
        "env --split-string='touch m'",
        "env --split-string 'touch m'",
    ] {
        denied_and_runs("", line, "touch");
    }
    // env takes `NAME=value` whatever its quoting: a program in PATH=bin.
    let stub = "mkdir bin && printf '#!/bin/sh\\n%s m\\n' \"$(command -v touch)\" > bin/ls && chmod +x bin/ls";
    refused_and_runs(stub, "env 'PATH'=bin ls", &["shell(env)", "shell(ls)"]);
}

#[test]
fn name_references() {
    // A fake `git` in ./bin, reached through a reference to PATH.
    let stub = "mkdir bin && printf '#!/bin/sh\\n%s m\\n' \"$(command -v touch)\" > bin/git && chmod +x bin/git";
    let allow = ["shell(declare)", "shell(typeset)", "shell(git)"];
    refused_and_runs(stub, "declare -n P=PATH; P=bin; git status", &allow);
    refused_and_runs(stub, "typeset -n P=PATH; P=bin; git status", &allow);
    refused_and_runs(
        stub,
        "f() { local -n P=PATH; P=bin; git status; }; f",
        &allow,
    );
    denied_and_runs(stub, "declare -n P=PATH; P=bin; git status", "touch");
}

#[test]
fn dangerous_assignments() {
    let gitconfig = "mkdir evil && printf '[alias]\\n\\tst = !touch m\\n' > evil/.gitconfig";
    refused_and_runs(gitconfig, "HOME=evil git st", &["shell(git)"]);
    denied_and_runs(gitconfig, "HOME=evil git st", "touch");
    let xdg = "mkdir -p cfg/git && printf '[alias]\\n\\tst = !touch m\\n' > cfg/git/config";
    refused_and_runs(xdg, "XDG_CONFIG_HOME=cfg git st", &["shell(git)"]);
    refused_and_runs(
        "",
        "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=alias.st GIT_CONFIG_VALUE_0='!touch m' git st",
        &["shell(git)"],
    );
    let bashrc = "mkdir evil && echo 'touch m' > evil/.bashrc";
    refused_and_runs(bashrc, "HOME=evil bash -i", &["shell(bash)"]);
    refused_and_runs(
        "",
        "PROMPT_COMMAND='touch m' bash --norc -i",
        &["shell(bash)"],
    );
}

#[test]
fn git_configuration_on_the_command_line() {
    refused_and_runs("", "git -c alias.x='!touch m' x", &["shell(git)"]);
    denied_and_runs("", "git -c alias.x='!touch m' x", "touch");
    refused_and_runs(
        "git init -q",
        "git -c core.fsmonitor='touch m' status",
        &["shell(git)", "shell(git status)"],
    );
    refused_and_runs(
        "",
        "X='!touch m' git --config-env=alias.x=X x",
        &["shell(git)"],
    );
    // Keys that run nothing stay approvable.
    assert_eq!(
        decide(
            &["shell(git)"],
            &[],
            "git -c user.name=x -c color.ui=never status"
        ),
        Decision::Approved
    );
}

#[test]
fn other_shells() {
    denied_and_runs("", "rbash -c 'touch m'", "touch");
    // dash reads `&>` as `&` and `>`: touch runs there, not in bash.
    denied_and_runs("", "sh -c 'echo x &>/dev/null touch m'", "touch");
    refused_and_runs(
        "",
        "sh -c 'echo x &>/dev/null touch m'",
        &["shell(sh)", "shell(echo)"],
    );
    // Start-up files and standard input.
    let bashrc = "echo 'touch m' > .bashrc";
    denied_and_runs(bashrc, "bash -i", "touch");
    refused_and_runs(bashrc, "bash -i -c true", &["shell(bash)", "shell(true)"]);
    denied_and_runs("echo 'touch m' > s", "rbash < s", "touch");
}

#[test]
fn options_that_change_the_reading() {
    // `set -k`: the assignment after the command name reaches its environment.
    let gitconfig = "mkdir evil && printf '[alias]\\n\\tst = !touch m\\n' > evil/.gitconfig";
    refused_and_runs(
        gitconfig,
        "set -k; git st HOME=evil",
        &["shell(set)", "shell(git)"],
    );
    // extglob: `!(x)` is a glob that names the program (the file `touch` here), where the
    // reading without it sees a subshell running `x`, then a command `m`.
    let line = "shopt -s extglob\n!(x) m";
    refused_and_runs(
        "touch touch",
        line,
        &["shell(shopt)", "shell(x)", "shell(m)"],
    );
    denied_and_runs("touch touch", line, "touch");
}
