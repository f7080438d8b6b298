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

#[test]
fn a_session_in_a_repository_records_its_git_context_and_workspace() {
    let env = Env::new();
    let work = env.work.path();
    git(work, &["init", "-q", "-b", "feature/x"]);
    git(work, &["add", "alpha.txt"]);
    git(work, &["commit", "-q", "-m", "one"]);
    git(
        work,
        &["remote", "add", "origin", "git@github.com:acme/widgets.git"],
    );
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
