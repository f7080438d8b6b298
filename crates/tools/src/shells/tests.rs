//! The shells' ids, reports, lost shells and untold ends.

use super::*;

fn spec(command: &str, mode: ShellMode) -> ShellSpec {
    ShellSpec {
        cwd: std::env::temp_dir(),
        command: command.into(),
        description: "d".into(),
        mode,
        log: None,
    }
}

#[test]
fn ids_are_numbers_unless_named() {
    let shells = Shells::default();
    assert_eq!(shells.new_id(None), "0");
    shells.insert(
        "1".into(),
        spec("x", ShellMode::Async),
        0,
        GroupGuard::none(),
    );
    assert_eq!(shells.new_id(None), "2", "a taken number is skipped");
    assert_eq!(shells.new_id(Some("mine")), "mine");
}

#[test]
fn reports_follow_the_runtime() {
    let shells = Shells::default();
    assert_eq!(shells.list(), "<no active shell sessions>");
    let shell = shells.insert(
        "s1".into(),
        spec("echo a", ShellMode::Async),
        42,
        GroupGuard::none(),
    );
    shell.push(b"start\n");
    assert_eq!(
        shell.report(0.0),
        "start\n<command with shellId: s1 is still running after 0 seconds. The command is still running. Use read_bash to continue waiting for output, or stop_bash to stop it.>"
    );
    assert!(shells.list().contains(
        "  shellId: s1, pid: 42, mode: async, status: running, elapsed: 0s, commands: 1, unread output: yes\n    current command: echo a"
    ));
    shell.push(b"end");
    shell.finish(0);
    assert_eq!(
        shell.report(5.0),
        "start\nend\n<shellId: s1 completed with exit code 0>"
    );
    assert_eq!(
        shell.report(0.0),
        "\n<shellId: s1 completed with exit code 0>"
    );
    assert!(
        shells.list().contains(
            "status: completed (exit code: 0), elapsed: 0s, commands: 1, unread output: no"
        )
    );
    let again = shells.insert(
        "s1".into(),
        spec("echo b", ShellMode::Async),
        43,
        GroupGuard::none(),
    );
    assert_eq!(again.commands, 2);
    assert!(shells.stop("s1").is_some());
    assert_eq!(shells.list(), "<no active shell sessions>");
}

#[tokio::test]
async fn an_end_no_call_waited_for_is_told_once() {
    let shells = Shells::default();
    let quiet = shells.insert(
        "q".into(),
        spec("a", ShellMode::Async),
        0,
        GroupGuard::none(),
    );
    let watched = shells.insert(
        "w".into(),
        spec("b", ShellMode::Async),
        0,
        GroupGuard::none(),
    );
    let stopped = shells.insert(
        "s".into(),
        spec("c", ShellMode::Async),
        0,
        GroupGuard::none(),
    );
    assert!(shells.take_untold_ends().is_empty(), "nothing ended yet");
    // A read waiting when the command ends tells it; nobody waits for the quiet one.
    let waiting = {
        let watched = Arc::clone(&watched);
        tokio::spawn(async move { watched.wait(Duration::from_secs(60)).await })
    };
    while watched.lock().waiters == 0 {
        tokio::task::yield_now().await;
    }
    watched.finish(3);
    assert!(waiting.await.unwrap());
    assert_eq!(watched.lock().waiters, 0, "the wait is over");
    // A read that gave up waiting does not count.
    assert!(!quiet.wait(Duration::ZERO).await);
    quiet.push(b"out\n");
    quiet.finish(4);
    // A stopped shell's end is stop_bash's to tell.
    assert!(stopped.stop());
    stopped.finish(137);
    assert_eq!(
        shells.take_untold_ends(),
        [EndedShell {
            id: "q".into(),
            description: "d".into(),
            exit_code: 4,
        }]
    );
    assert!(shells.take_untold_ends().is_empty(), "told once");
    // A call with no description is named by its command.
    let unnamed = shells.insert(
        "u".into(),
        ShellSpec {
            description: String::new(),
            ..spec("make all", ShellMode::Async)
        },
        0,
        GroupGuard::none(),
    );
    unnamed.finish(0);
    assert_eq!(shells.take_untold_ends()[0].description, "make all");
}

#[test]
fn lost_shells_are_listed() {
    let shells = Shells::default();
    shells.add_lost([
        LostShell {
            id: "srv".into(),
            command: "python3 -m http.server".into(),
            untold: true,
        },
        LostShell {
            id: "0".into(),
            command: "make".into(),
            untold: false,
        },
    ]);
    assert!(shells.list().contains("shellId: srv, status: lost"));
    // Told once, and only the shells nothing else told.
    let told: Vec<String> = shells
        .take_untold_lost()
        .into_iter()
        .map(|l| l.id)
        .collect();
    assert_eq!(told, ["srv"]);
    assert!(shells.take_untold_lost().is_empty());
    assert!(shells.lost("srv").is_some());
    shells.stop("srv");
    assert!(shells.lost("srv").is_none());
}
