//! A JSON-RPC client of `turnstile --headless --stdio` over real pipes, framed with
//! `Content-Length` as the SDK clients frame it; notifications are kept for the test to read.
//! The framing itself ([`read_frame`], [`write_frame`]) serves any stream, a socket too.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdout, Command, ExitStatus, Stdio};

use serde_json::{Value, json};

/// A running server and what it sent besides answers.
pub struct StdioServer {
    child: Child,
    out: BufReader<ChildStdout>,
    next_id: u64,
    /// Notifications received so far, in order.
    pub notifications: Vec<Value>,
}

impl StdioServer {
    /// Starts `cmd` (which must serve on stdio) with piped stdin and stdout.
    pub fn spawn(mut cmd: Command) -> Self {
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        let out = BufReader::new(child.stdout.take().unwrap());
        StdioServer {
            child,
            out,
            next_id: 1,
            notifications: Vec::new(),
        }
    }

    /// Calls `method` and returns the whole answer (`result` or `error`).
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        write_frame(self.child.stdin.as_mut().unwrap(), &request);
        loop {
            let message = self.read_frame();
            if message["id"] == id && message.get("method").is_none() {
                return message;
            }
            if message.get("id").is_none() {
                self.notifications.push(message);
            }
        }
    }

    /// Calls `method` and returns its `result`, failing the test on an error answer.
    pub fn ok(&mut self, method: &str, params: Value) -> Value {
        let answer = self.call(method, params);
        assert!(answer.get("error").is_none(), "{method}: {answer}");
        answer["result"].clone()
    }

    /// A session on the OpenAI-style model at `model_url` (model `test-model`), working in
    /// `work`; its id.
    pub fn create_session(&mut self, model_url: &str, work: &std::path::Path) -> String {
        let created = self.ok(
            "session.create",
            json!({
                "provider": {"type": "openai", "baseUrl": model_url, "apiKey": "k"},
                "model": "test-model",
                "workingDirectory": work,
            }),
        );
        created["sessionId"].as_str().unwrap().to_owned()
    }

    /// Sends `prompt` to session `id` and reads its events until `session.idle`.
    pub fn send_until_idle(&mut self, id: &str, prompt: &str) -> Vec<Value> {
        self.ok("session.send", json!({"sessionId": id, "prompt": prompt}));
        self.events_until(|e| e["type"] == "session.idle")
    }

    /// The `session.event` types received so far, in order.
    pub fn event_types(&self) -> Vec<String> {
        self.notifications
            .iter()
            .filter(|n| n["method"] == "session.event")
            .filter_map(|n| n["params"]["event"]["type"].as_str().map(str::to_owned))
            .collect()
    }

    /// The `session.event` events from the first not yet taken up to one matching `done`
    /// (reading more as needed); notifications taken are removed from [`Self::notifications`].
    pub fn events_until(&mut self, done: impl Fn(&Value) -> bool) -> Vec<Value> {
        let mut events = Vec::new();
        let mut buffered = std::mem::take(&mut self.notifications).into_iter();
        loop {
            let message = match buffered.next() {
                Some(message) => message,
                None => self.read_frame(),
            };
            if message["method"] == "session.event" {
                let event = message["params"]["event"].clone();
                let stop = done(&event);
                events.push(event);
                if stop {
                    self.notifications = buffered.collect();
                    return events;
                }
            }
        }
    }

    /// As [`Self::events_until`] (reading only new frames), answering each request the server
    /// sends the client with `answer(method, params)` as its `result`.
    pub fn events_answering(
        &mut self,
        mut answer: impl FnMut(&str, &Value) -> Value,
        done: impl Fn(&Value) -> bool,
    ) -> Vec<Value> {
        let mut events = Vec::new();
        loop {
            let message = self.read_frame();
            match (message["method"].as_str(), message.get("id")) {
                (Some("session.event"), _) => {
                    let event = message["params"]["event"].clone();
                    let stop = done(&event);
                    events.push(event);
                    if stop {
                        return events;
                    }
                }
                (Some(method), Some(id)) => {
                    let result = answer(method, &message["params"]);
                    let reply = json!({"jsonrpc": "2.0", "id": id, "result": result});
                    write_frame(self.child.stdin.as_mut().unwrap(), &reply);
                }
                _ => self.notifications.push(message),
            }
        }
    }

    /// Closes stdin (the client leaves) and waits for the server to exit.
    pub fn close(self) -> ExitStatus {
        self.stop().0
    }

    /// Closes stdin, waits for the exit, and returns the status and stderr (when piped).
    pub fn stop(mut self) -> (ExitStatus, String) {
        drop(self.child.stdin.take());
        let mut stderr = String::new();
        if let Some(mut err) = self.child.stderr.take() {
            let _ = err.read_to_string(&mut stderr);
        }
        (self.child.wait().unwrap(), stderr)
    }

    /// Kills the server (a client that vanished) and reaps it.
    pub fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    fn read_frame(&mut self) -> Value {
        read_frame(&mut self.out).expect("the server closed stdout")
    }
}

/// Writes `message` as one frame.
pub fn write_frame(to: &mut impl Write, message: &Value) {
    let body = message.to_string();
    write!(to, "Content-Length: {}\r\n\r\n{body}", body.len()).unwrap();
    to.flush().unwrap();
}

/// Reads one frame; `None` when the stream ended before one began.
pub fn read_frame(from: &mut impl BufRead) -> Option<Value> {
    let mut length = None;
    loop {
        let mut line = String::new();
        if from.read_line(&mut line).unwrap() == 0 {
            assert!(length.is_none(), "the stream ended inside a frame header");
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = Some(value.trim().parse::<usize>().unwrap());
        }
    }
    let mut frame = vec![0; length.expect("a Content-Length header")];
    from.read_exact(&mut frame).unwrap();
    Some(serde_json::from_slice(&frame).unwrap())
}
