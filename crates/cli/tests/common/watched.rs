//! A `turnstile run --json` (or `resume --json`) child watched event by event, so a test can
//! act at a chosen point of the session (check a process, write a file, `kill -9` the engine)
//! while the engine is still running.

use std::io::{BufRead, BufReader, Lines};
use std::process::{Child, ChildStdout, Command, ExitStatus, Stdio};

use serde_json::Value;

/// A running engine and the events it has printed but the test has not read yet. Dropped
/// before it was waited for (a failed assertion), it kills the engine, so a failing test
/// leaves no engine behind holding the test's output open.
pub struct Watched {
    child: Child,
    lines: Option<Lines<BufReader<ChildStdout>>>,
    waited: bool,
}

impl Watched {
    /// Starts `cmd` (which must print `--json` events) with its stdout piped.
    pub fn spawn(mut cmd: Command) -> Self {
        let mut child = cmd.stdout(Stdio::piped()).spawn().unwrap();
        let stdout = child.stdout.take().unwrap();
        Watched {
            child,
            lines: Some(BufReader::new(stdout).lines()),
            waited: false,
        }
    }

    /// Reads events until one matches `done` and returns it; fails the test if the engine
    /// ends first.
    pub fn until(&mut self, done: impl Fn(&Value) -> bool) -> Value {
        for line in self.lines.iter_mut().flatten() {
            let event: Value = serde_json::from_str(&line.unwrap()).unwrap();
            if done(&event) {
                return event;
            }
        }
        panic!("the engine ended before the event the test waits for");
    }

    /// Reads the rest of its output elsewhere, so a full pipe never stops the engine.
    fn drain(&mut self) {
        if let Some(lines) = self.lines.take() {
            std::thread::spawn(move || for _ in lines {});
        }
    }

    /// SIGKILLs the engine (a crash) and reaps it.
    pub fn kill_9(mut self) {
        self.drain();
        self.child.kill().unwrap();
        self.child.wait().unwrap();
        self.waited = true;
    }

    /// Waits for the engine to exit.
    pub fn wait(mut self) -> ExitStatus {
        self.drain();
        let status = self.child.wait().unwrap();
        self.waited = true;
        status
    }
}

impl Drop for Watched {
    fn drop(&mut self) {
        if !self.waited {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// True for the `tool.execution_start` of call `id`.
pub fn started(id: &str) -> impl Fn(&Value) -> bool + '_ {
    move |e| e["type"] == "tool.execution_start" && e["data"]["toolCallId"] == id
}

/// True for the `tool.execution_complete` of call `id`.
pub fn completed(id: &str) -> impl Fn(&Value) -> bool + '_ {
    move |e| e["type"] == "tool.execution_complete" && e["data"]["toolCallId"] == id
}
