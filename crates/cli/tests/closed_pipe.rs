//! A reader that goes away ends a command quietly: every command that prints a lot, its
//! stdout (and for `run`, its stderr too) a real pipe whose read end is closed before the
//! command starts, ends without a panic, with the status a shell reports for such a command
//! (killed by SIGPIPE, or 141 where a session had to be closed first), and a session that was
//! running is closed cleanly.

use crate::common;

use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Output, Stdio};

use assert_cmd::cargo::CommandCargoExt;
use common::{Env, audit_clean};
use turnstile_scripted_model::Script;

/// A pipe's write end whose read end is already closed.
fn widowed_pipe() -> std::io::PipeWriter {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    writer
}

/// Runs `cmd` with stdout (and stderr too when `both`) on a widowed pipe.
fn into_closed_pipe(cmd: &mut Command, both: bool) -> Output {
    let writer = widowed_pipe();
    if both {
        cmd.stderr(Stdio::from(writer.try_clone().unwrap()));
    } else {
        cmd.stderr(Stdio::piped());
    }
    cmd.stdout(Stdio::from(writer)).output().unwrap()
}

/// Ended as a command does when its reader goes away, and said nothing about it.
fn ended_quietly(what: &str, out: &Output) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("panicked") && !stderr.contains("Broken pipe"),
        "{what}: {stderr}"
    );
    let by_signal = out.status.signal() == Some(libc::SIGPIPE);
    let by_code = out.status.code() == Some(141);
    assert!(by_signal || by_code, "{what}: {:?}\n{stderr}", out.status);
}

#[test]
fn run_whose_reader_left_closes_the_session_and_exits_141() {
    for both in [false, true] {
        let env = Env::new();
        let long = "word ".repeat(20_000);
        let server = env.server(Script::new().text(long));
        let out = into_closed_pipe(&mut env.cmd(&server, &["run", "say a lot"]), both);
        ended_quietly(&format!("run (stderr closed too: {both})"), &out);
        let (_, journal) = env.only_session();
        // Closed, not crashed: the journal ends with the shutdown and audits clean.
        let text = std::fs::read_to_string(&journal).unwrap();
        let last = text.lines().last().unwrap();
        assert!(last.contains("\"session.shutdown\""), "{last}");
        audit_clean(&journal);
    }
}

#[test]
fn reading_commands_whose_reader_left_end_quietly() {
    let env = Env::new();
    let server = env.server(Script::new().text("many words ".repeat(5_000)));
    env.run_ok(&server, &["run", "--no-stream", "say a lot"]);
    let (id, _) = env.only_session();
    let state = env.state.path().to_str().unwrap().to_owned();
    let commands: Vec<Vec<&str>> = vec![
        vec!["events", &id],
        vec!["events", &id, "--json"],
        vec!["sessions"],
        vec!["sessions", "--json"],
        vec!["audit", &id],
        vec!["history", &id, "--json"],
        vec!["fsck", &id, "--json"],
        vec!["export", &id],
        vec!["config"],
    ];
    for args in commands {
        let mut cmd = Command::cargo_bin("turnstile").unwrap();
        cmd.arg("--state-dir").arg(&state).args(&args);
        ended_quietly(&args.join(" "), &into_closed_pipe(&mut cmd, false));
    }
    let mut cmd = Command::cargo_bin("turnstile").unwrap();
    cmd.current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["rewind", &id, "--state-dir", &state]);
    ended_quietly("rewind (list)", &into_closed_pipe(&mut cmd, false));
}
