//! What the store's benchmarks share: index entries written straight into the bucket, and the
//! CPU time of a process.

use turnstile_journal::{SessionSummary, Uuid};

/// Writes `count` index entries into `bucket` of the server at `url`, as `turnstile` records a
/// closed session (`$KV.<bucket>.<id>`, the summary and its ending as JSON), pipelined: up to 1000
/// publishes in flight. Timestamps increase with the entry's number, ids are random, as
/// sessions created one after another are.
pub async fn write_index(url: &str, bucket: &str, count: usize) {
    let client = async_nats::connect(url).await.expect("connect");
    let js = async_nats::jetstream::new(client);
    let base = 1_790_000_000_000i64;
    let mut acks = Vec::with_capacity(1000);
    for i in 0..count {
        let id = Uuid::new_v4();
        let created = turnstile_journal::Timestamp::from_millis(base + i as i64 * 60_000);
        let updated = turnstile_journal::Timestamp::from_millis(base + i as i64 * 60_000 + 9_000);
        let summary = SessionSummary {
            id: Some(id),
            cwd: Some("/work/project".into()),
            created: Some(created.to_string()),
            updated: Some(updated.to_string()),
            events: 10,
            size: 2_700,
            first_prompt: Some(format!("fix the failing test number {i}")),
        };
        // As `gen_sessions` makes them: all but one in 100 shut down.
        let ending = turnstile_journal::ending::Ending {
            shut_down: i % 100 != 0,
            error_since_prompt: false,
            model: Some("gpt-4.1".into()),
        };
        let value = turnstile_store_nats::IndexValue::new(summary, Some(ending));
        let ack = js
            .publish(
                format!("$KV.{bucket}.{id}"),
                serde_json::to_vec(&value).expect("json").into(),
            )
            .await
            .expect("publish");
        acks.push(ack);
        if acks.len() >= 1000 {
            for ack in acks.drain(..) {
                ack.await.expect("ack");
            }
        }
    }
    for ack in acks {
        ack.await.expect("ack");
    }
}

/// User + system CPU seconds of process `pid` (`self`: this one), from `/proc`.
pub fn cpu_seconds(pid: &str) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the parenthesised command name: state is field 3, utime 14, stime 15.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // SAFETY: sysconf reads a constant of the running system.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    (ticks(11) + ticks(12)) / per_second
}
