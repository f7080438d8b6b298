//! The session directory as the Copilot CLI lays it out, written by the real binary:
//! `session.start`'s git context, `workspace.yaml` and the CLI's folders, inside a repository
//! with a remote and outside any repository.

use crate::common;

use std::path::Path;
use std::process::Command;

use common::{Env, journal_values};
use turnstile_scripted_model::Script;

/// `git ARGS` in `dir`, asserted successful; its output trimmed.
fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.invalid")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A repository in `work` on `branch`, its files committed once, `remote` its origin.
fn repository(work: &Path, branch: &str, remote: &str) {
    git(work, &["init", "-q", "-b", branch]);
    git(work, &["add", "alpha.txt"]);
    git(work, &["commit", "-q", "-m", "one"]);
    git(work, &["remote", "add", "origin", remote]);
}

#[test]
fn a_session_in_a_repository_records_its_git_context_and_workspace() {
    let env = Env::new();
    let work = env.work.path();
    repository(work, "feature/x", "git@github.com:acme/widgets.git");
    // Packed refs, as after a `git gc`: the head is read from packed-refs.
    git(work, &["pack-refs", "--all"]);
    let head = git(work, &["rev-parse", "HEAD"]);
    let root = std::fs::canonicalize(work).unwrap().display().to_string();

    let server = env.server(Script::new().text("done"));
    env.run_ok(&server, &["run", "Fix: the bug\nsecond line"]);
    let (id, journal) = env.only_session();
    let events = journal_values(&journal);
    let start = &events[0];
    assert_eq!(start["type"], "session.start");
    let context = &start["data"]["context"];
    let keys: Vec<&str> = context
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "cwd",
            "gitRoot",
            "repository",
            "hostType",
            "repositoryHost",
            "branch",
            "headCommit"
        ]
    );
    assert_eq!(context["gitRoot"], root.as_str());
    assert_eq!(context["repository"], "acme/widgets");
    assert_eq!(context["hostType"], "github");
    assert_eq!(context["repositoryHost"], "github.com");
    assert_eq!(context["branch"], "feature/x");
    assert_eq!(context["headCommit"], head.as_str());

    let dir = journal.parent().unwrap();
    let yaml = std::fs::read_to_string(dir.join("workspace.yaml")).unwrap();
    let lines: Vec<&str> = yaml.lines().collect();
    assert_eq!(lines[0], format!("id: {id}"));
    assert_eq!(
        lines[2..11],
        [
            format!("git_root: {root}").as_str(),
            "repository: acme/widgets",
            "host_type: github",
            "branch: feature/x",
            "client_name: github/cli",
            "name: |-",
            "  Fix: the bug",
            "  second line",
            "user_named: false",
        ],
        "{yaml}"
    );
    assert!(lines[12].starts_with("created_at: ") && lines[13].starts_with("updated_at: "));
    for folder in ["checkpoints", "files", "research"] {
        assert!(dir.join(folder).is_dir(), "{folder}");
    }
    assert!(
        std::fs::read_to_string(dir.join("checkpoints/index.md"))
            .unwrap()
            .starts_with("# Checkpoint History\n")
    );
}

#[test]
fn outside_a_repository_the_context_is_the_working_directory_alone() {
    let env = Env::new();
    let server = env.server(Script::new().text("done"));
    env.run_ok(&server, &["run", "hello"]);
    let (_, journal) = env.only_session();
    let events = journal_values(&journal);
    let context = events[0]["data"]["context"].as_object().unwrap().clone();
    assert_eq!(context.keys().collect::<Vec<_>>(), ["cwd"]);
    let yaml = std::fs::read_to_string(journal.parent().unwrap().join("workspace.yaml")).unwrap();
    assert!(
        !yaml.contains("git_root") && !yaml.contains("branch"),
        "{yaml}"
    );
    assert!(yaml.contains("\nname: hello\n"), "{yaml}");
}

#[test]
fn a_resume_records_the_branch_and_head_of_its_time() {
    let env = Env::new();
    let work = env.work.path();
    repository(work, "main", "https://github.com/acme/widgets.git");
    let first_head = git(work, &["rev-parse", "HEAD"]);
    let server = env.server(Script::new().text("done").text("again"));
    env.run_ok(&server, &["run", "First prompt"]);
    let (id, journal) = env.only_session();
    let dir = journal.parent().unwrap();
    let yaml_before = std::fs::read_to_string(dir.join("workspace.yaml")).unwrap();

    // Between the runs the user switches branch and commits, as the Copilot CLI's test did.
    git(work, &["checkout", "-q", "-b", "feature"]);
    std::fs::write(work.join("alpha.txt"), "changed\n").unwrap();
    git(work, &["commit", "-q", "-am", "two"]);
    let second_head = git(work, &["rev-parse", "HEAD"]);
    assert_ne!(first_head, second_head);
    env.run_ok(&server, &["resume", &id, "Second prompt"]);

    let events = journal_values(&journal);
    let start = &events[0]["data"]["context"];
    assert_eq!(start["branch"], "main", "the start keeps its own time");
    assert_eq!(start["headCommit"], first_head.as_str());
    let resume = events
        .iter()
        .find(|e| e["type"] == "session.resume")
        .expect("a session.resume");
    let context = &resume["data"]["context"];
    assert_eq!(context["branch"], "feature");
    assert_eq!(context["headCommit"], second_head.as_str());
    assert_eq!(context["repository"], "acme/widgets");
    assert_eq!(context["gitRoot"], start["gitRoot"]);

    let yaml = std::fs::read_to_string(dir.join("workspace.yaml")).unwrap();
    assert!(yaml.contains("\nbranch: feature\n"), "{yaml}");
    let kept = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|l| !l.starts_with("branch:") && !l.starts_with("updated_at:"))
            .map(String::from)
            .collect()
    };
    assert_eq!(kept(&yaml), kept(&yaml_before), "the rest is kept");
    let updated = |text: &str| {
        text.lines()
            .find(|l| l.starts_with("updated_at: "))
            .map(String::from)
    };
    assert_ne!(updated(&yaml), updated(&yaml_before));
}
