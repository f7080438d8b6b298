//! `turnstile sessions`: the sessions under the state root.

use std::path::Path;
use std::process::ExitCode;

use std::io::Write;

use anyhow::Result;
use turnstile_journal::{SessionSummary, StateRoot};

/// Lists sessions, newest first, from the session index unless `use_index` is false.
pub fn run(json: bool, use_index: bool, state_dir: Option<&Path>) -> Result<ExitCode> {
    let root = StateRoot::resolve(state_dir)?;
    let all = if use_index {
        SessionSummary::list_indexed(&root)?.0
    } else {
        SessionSummary::list(&root)?
    };
    print(&all, json, &root.dir().display().to_string())
}

/// Lists the sessions of a JetStream store, from its index.
pub fn run_stored(json: bool, config: turnstile_store_nats::NatsConfig) -> Result<ExitCode> {
    use turnstile_store::JournalStore;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let (all, place) = runtime.block_on(async {
        let store = crate::store::open_nats(config).await?;
        anyhow::Ok((store.list().await?, store.describe()))
    })?;
    print(&all, json, &place)
}

fn print(all: &[SessionSummary], json: bool, place: &str) -> Result<ExitCode> {
    if json {
        let mut out = std::io::BufWriter::new(std::io::stdout().lock());
        serde_json::to_writer_pretty(&mut out, all)?;
        writeln!(out)?;
        out.flush()?;
        return Ok(ExitCode::SUCCESS);
    }
    if all.is_empty() {
        eprintln!("no sessions in {place}");
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "{:<36}  {:<24}  {:>7}  {:>9}  {:<24}  FIRST PROMPT",
        "ID", "UPDATED", "EVENTS", "SIZE", "CWD"
    );
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for s in all {
        writeln!(
            out,
            "{:<36}  {:<24}  {:>7}  {:>9}  {:<24}  {}",
            s.id.map(|i| i.to_string()).unwrap_or_default(),
            s.updated.as_deref().unwrap_or("-"),
            s.events,
            human_bytes(s.size),
            s.cwd.as_deref().unwrap_or("-"),
            s.first_prompt.as_deref().unwrap_or("")
        )?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// Bytes in the largest unit that keeps the number above 1.
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["B", "KiB", "MiB", "GiB"];
    let mut value = n as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}
