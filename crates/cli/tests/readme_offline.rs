//! The README's "Trying it offline" walk-through, run as written: the four commands are read
//! from the README itself (so the test follows the text, and the text cannot drift from what
//! works), with only the port made free and the binaries taken from this build. The real
//! `scripted-model` process, the real `turnstile` binary, real files in a copy of the two
//! files the walk-through touches (`README.md`, `examples/`).

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use crate::common::repo::root as repo;

/// The command lines of the first `sh` block under `## Trying it offline`, comments cut.
fn walkthrough(readme: &str) -> Vec<String> {
    let section = readme
        .split("\n## Trying it offline")
        .nth(1)
        .expect("README.md has a \"## Trying it offline\" section");
    let block = section
        .split("```sh\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("the section has a ```sh block");
    block
        .lines()
        .map(|l| l.split("  #").next().unwrap_or(l).trim().to_owned())
        .filter(|l| !l.is_empty())
        .collect()
}

/// The words of a command line (the walk-through quotes with `"` only).
fn words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut quoted = false;
    let mut word = String::new();
    for c in line.chars() {
        match c {
            '"' => quoted = !quoted,
            ' ' if !quoted => {
                if !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
            }
            c => word.push(c),
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    words
}

/// A binary of this build, beside `turnstile`.
fn binary(name: &str) -> PathBuf {
    let turnstile = PathBuf::from(env!("CARGO_BIN_EXE_turnstile"));
    let path = turnstile.with_file_name(name);
    assert!(
        path.exists(),
        "{} is missing: `cargo build -p turnstile-scripted-model` (make test builds it)",
        path.display()
    );
    path
}

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn the_readme_walkthrough_runs_as_written() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let lines = walkthrough(&readme);
    assert_eq!(lines.len(), 4, "four commands: {lines:?}");
    let [serve, run, resume, report] =
        [&lines[0], &lines[1], &lines[2], &lines[3]].map(|l| words(l));
    assert_eq!(serve[0], "scripted-model", "{serve:?}");
    assert_eq!(run[..2], ["turnstile", "run"], "{run:?}");
    assert_eq!(resume[..2], ["turnstile", "resume"], "{resume:?}");
    assert!(
        !resume.iter().any(|w| w == "--base-url" || w == "--model"),
        "the resume needs no model flags: {resume:?}"
    );
    assert_eq!(report[..2], ["turnstile", "report"], "{report:?}");

    // The checkout's files the walk-through reads, in a scratch copy (the report lands there).
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path().join("checkout");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::copy(repo().join("README.md"), work.join("README.md")).unwrap();
    turnstile_testing::copy_tree(&repo().join("examples"), &work.join("examples")).unwrap();
    let home = tmp.path().join("home");

    // The server, on a free port instead of the README's.
    let port = serve.iter().position(|w| w == "--port").unwrap() + 1;
    let readme_port = serve[port].clone();
    let mut args = serve[1..].to_vec();
    args[port - 1] = "0".into();
    let mut server = Command::new(binary("scripted-model"));
    server
        .args(&args)
        .current_dir(&work)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    let mut server = Killed(server.spawn().unwrap());
    let mut first = String::new();
    BufReader::new(server.0.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let url = first
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("scripted-model printed {first:?}"))
        .to_owned();

    let turnstile = |words: &[String]| {
        let args: Vec<String> = words[1..]
            .iter()
            .map(|w| w.replace(&format!("http://127.0.0.1:{readme_port}/v1"), &url))
            .collect();
        let out = Command::new(env!("CARGO_BIN_EXE_turnstile"))
            .args(&args)
            .current_dir(&work)
            .env("COPILOT_HOME", &home)
            .env_remove("TURNSTILE_BASE_URL")
            .env_remove("TURNSTILE_MODEL")
            .env_remove("COPILOT_MODEL")
            .env_remove("COPILOT_PROVIDER_BASE_URL")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{args:?}\n{stdout}\n{stderr}");
        (stdout, stderr)
    };
    let (answer, tools) = turnstile(&run);
    assert!(
        answer.contains("This is a turnstile checkout"),
        "{answer}\n{tools}"
    );
    // The tools really ran here: glob found the README, view read its first lines.
    assert!(
        tools.contains("→ glob") && tools.contains("README.md"),
        "{tools}"
    );
    assert!(tools.contains("→ view"), "{tools}");
    // The resume reaches the same scripted server and model with no flag for either.
    let (answer, _) = turnstile(&resume);
    assert!(answer.contains("I read README.md"), "{answer}");
    let (printed, _) = turnstile(&report);
    let page = std::fs::read_to_string(work.join("report.html")).expect("report.html written");
    assert!(page.starts_with("<!DOCTYPE html>") || page.starts_with("<!doctype html>"));
    assert!(printed.contains("report.html"), "{printed}");

    // "The run makes three LLM calls", as the README says: the audit counts them.
    let state = home.join("session-state");
    let ids: Vec<_> = std::fs::read_dir(&state)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("events.jsonl").exists())
        .collect();
    assert_eq!(ids.len(), 1, "one session recorded under $COPILOT_HOME");
    let id = ids[0].file_name().to_string_lossy().into_owned();
    let (count, _) = turnstile(&[
        "turnstile".into(),
        "audit".into(),
        id,
        "--count".into(),
        "assistant.turn_start".into(),
    ]);
    assert_eq!(count.trim(), "4");
    assert!(readme.contains("The run makes three LLM calls"));
    assert!(readme.contains("The resume sends one more prompt"));
}

#[test]
fn the_walkthrough_reader_cuts_comments_and_keeps_quoted_words() {
    let text =
        "intro\n## Trying it offline\n\nsome text\n\n```sh\na --b 1\nc \"d e\"   # note\n```\n";
    let lines = walkthrough(text);
    assert_eq!(lines, ["a --b 1", "c \"d e\""]);
    assert_eq!(words(&lines[1]), ["c", "d e"]);
}

/// The commands a text lists: the first word of each line indented by exactly two spaces.
fn listed_commands(block: &str) -> std::collections::BTreeSet<String> {
    block
        .lines()
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|w| w.chars().all(|c| c.is_ascii_lowercase()))
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_readme_lists_the_commands_the_binary_has() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let block = readme
        .split("\n## All commands")
        .nth(1)
        .and_then(|s| s.split("```").nth(1))
        .expect("README.md has a ```-block under \"## All commands\"");
    let out = Command::new(env!("CARGO_BIN_EXE_turnstile"))
        .arg("--help")
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&out.stdout).into_owned();
    let commands = help
        .split("Commands:\n")
        .nth(1)
        .and_then(|s| s.split("\n\n").next())
        .expect("--help has a Commands: section");
    let mut from_help = listed_commands(commands);
    from_help.remove("help");
    assert!(from_help.len() > 10, "{from_help:?}");
    assert_eq!(listed_commands(block), from_help, "README.md vs --help");
}
