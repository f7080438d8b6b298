//! Generates a state root of many small sessions for `make bench-sessions` and `make
//! bench-listing`: each a short journal like one prompt of the loop writes (start, prompt, two
//! turns, a tool call, the shutdown), with distinct, increasing timestamps. One session in
//! [`OPEN_EVERY`] ends without `session.shutdown`, as a killed one does (its listing looks up
//! its in-use marker). Files are written directly (no fsync): only listing speed is measured
//! on them.
//!
//!     gen_sessions DIR COUNT

use std::io::Write;

use turnstile_journal::{Event, EventType, Timestamp, Uuid};

fn line(out: &mut Vec<u8>, kind: &str, data: String, parent: Option<Uuid>, ms: i64) -> Uuid {
    let mut ev = Event::with_raw_data(
        EventType::new(kind),
        serde_json::value::RawValue::from_string(data).expect("valid data"),
        parent,
    );
    ev.timestamp = Timestamp::from_millis(ms);
    ev.write_persisted(out);
    out.push(b'\n');
    ev.id
}

/// One session in this many is left without its shutdown.
const OPEN_EVERY: u64 = 100;

fn main() {
    let mut args = std::env::args().skip(1);
    let (Some(dir), Some(count)) = (args.next(), args.next()) else {
        eprintln!("usage: gen_sessions DIR COUNT");
        std::process::exit(2);
    };
    let count: u64 = count.parse().expect("COUNT is a number");
    let root = std::path::PathBuf::from(dir);
    std::fs::create_dir_all(&root).expect("create the root");
    let base = 1_790_000_000_000i64;
    let mut buf = Vec::with_capacity(8192);
    for n in 0..count {
        // Spread ids (UUIDs in random order) from timestamps (in creation order).
        let id = Uuid::new_v4();
        let t = base + (n as i64) * 60_000;
        buf.clear();
        let p = line(
            &mut buf,
            "session.start",
            format!(
                r#"{{"sessionId":"{id}","version":1,"producer":"turnstile","copilotVersion":"0.1.0","startTime":"x","selectedModel":"gpt-4.1","context":{{"cwd":"/home/dev/projects/service-{}"}}}}"#,
                n % 97
            ),
            None,
            t,
        );
        let p = line(
            &mut buf,
            "user.message",
            format!(
                r#"{{"content":"Session {n}: find why the nightly build of service {} fails on the integration tests and fix it","transformedContent":"same"}}"#,
                n % 97
            ),
            Some(p),
            t + 5,
        );
        let p = line(
            &mut buf,
            "assistant.turn_start",
            r#"{"turnId":"0"}"#.into(),
            Some(p),
            t + 10,
        );
        let p = line(&mut buf, "assistant.message", r#"{"messageId":"m1","content":"","toolRequests":[{"toolCallId":"c1","name":"bash","arguments":{"command":"make test 2>&1 | tail -n 50"}}]}"#.into(), Some(p), t + 900);
        let p = line(&mut buf, "tool.execution_start", r#"{"toolCallId":"c1","toolName":"bash","arguments":{"command":"make test 2>&1 | tail -n 50"}}"#.into(), Some(p), t + 905);
        let p = line(&mut buf, "tool.execution_complete", r#"{"toolCallId":"c1","success":true,"result":{"content":"test integration::nightly ... FAILED\n<exited with exit code 1>"}}"#.into(), Some(p), t + 4000);
        let p = line(
            &mut buf,
            "assistant.turn_end",
            r#"{"turnId":"0"}"#.into(),
            Some(p),
            t + 4001,
        );
        let p = line(
            &mut buf,
            "assistant.turn_start",
            r#"{"turnId":"1"}"#.into(),
            Some(p),
            t + 4002,
        );
        let p = line(&mut buf, "assistant.message", r#"{"messageId":"m2","content":"The nightly job runs the integration tests without the database fixture; I added it.","toolRequests":[]}"#.into(), Some(p), t + 6000);
        let p = line(
            &mut buf,
            "assistant.turn_end",
            r#"{"turnId":"1"}"#.into(),
            Some(p),
            t + 6001,
        );
        if n % OPEN_EVERY != OPEN_EVERY - 1 {
            line(
                &mut buf,
                "session.shutdown",
                r#"{"shutdownType":"routine","totalPremiumRequests":1,"totalApiDurationMs":2900,"sessionStartTime":0,"codeChanges":{"linesAdded":3,"linesRemoved":0,"filesModified":["ci/nightly.yml"]}}"#.into(),
                Some(p),
                t + 6002,
            );
        }
        let dir = root.join(id.to_string());
        std::fs::create_dir(&dir).expect("create a session directory");
        let mut f = std::fs::File::create(dir.join("events.jsonl")).expect("create a journal");
        f.write_all(&buf).expect("write a journal");
    }
    eprintln!("{count} sessions in {}", root.display());
}
