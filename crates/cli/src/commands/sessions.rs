//! `turnstile sessions`: the sessions under the state root.

use std::path::Path;
use std::process::ExitCode;

use std::io::Write;

use anyhow::{Context, Result};
use turnstile_journal::{SessionSummary, StateRoot};

use crate::session_status::Status;

/// Which sessions `sessions` lists.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Only those whose working directory is this one.
    pub cwd: Option<std::path::PathBuf>,
    /// At most this many, the newest.
    pub limit: Option<usize>,
}

/// Lists sessions, newest first, from the session index unless `use_index` is false, each
/// with its status and model (`crate::session_status`).
pub fn run(
    json: bool,
    use_index: bool,
    filter: &Filter,
    state_dir: Option<&Path>,
) -> Result<ExitCode> {
    let root = StateRoot::resolve(state_dir)?;
    // Beside each session, how its journal ends when the index knows it (`None`: read it).
    let (all, endings) = if use_index {
        let listing = SessionSummary::list_indexed_with_endings(&root)?;
        (listing.sessions, listing.endings)
    } else {
        let all = SessionSummary::list(&root)?;
        let endings = vec![None; all.len()];
        (all, endings)
    };
    let cwd = filter.cwd.as_ref().map(|dir| {
        dir.canonicalize()
            .unwrap_or_else(|_| dir.clone())
            .display()
            .to_string()
    });
    let (shown, statuses): (Vec<SessionSummary>, Vec<Status>) = all
        .into_iter()
        .zip(endings)
        .filter(|(s, _)| cwd.is_none() || s.cwd == cwd)
        .take(filter.limit.unwrap_or(usize::MAX))
        .map(|(s, ending)| {
            let status = match s.id {
                Some(id) => crate::session_status::of(ending, || root.session(id).dir),
                None => Status::default(),
            };
            (s, status)
        })
        .unzip();
    let printed = print_with(
        &shown,
        Some(&statuses),
        json,
        &root.dir().display().to_string(),
    );
    // The process ends after the listing: freeing a million sessions' strings one by one
    // (five each) was a tenth of a warm listing's time, for memory the exit returns at once.
    #[allow(clippy::mem_forget)]
    std::mem::forget((shown, statuses));
    printed
}

/// Lists the sessions of a JetStream store, from its index, each with the status and model
/// its entry records.
pub fn run_stored(json: bool, config: turnstile_store_nats::NatsConfig) -> Result<ExitCode> {
    use turnstile_store::JournalStore;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let (listing, leased, place) = runtime.block_on(async {
        let store = crate::store::open_nats(config).await?;
        let listing = store.list_with_endings().await?;
        // One pass over the lease bucket, which holds the running sessions only: an entry
        // is written at detach, so a running session's (resumed) may say it shut down.
        let leased = store.leased().await?;
        anyhow::Ok((listing, leased, store.describe()))
    })?;
    let statuses: Vec<Status> = listing
        .sessions
        .iter()
        .zip(listing.endings)
        .map(|(s, ending)| {
            crate::session_status::of_stored(ending, s.id.is_some_and(|id| leased.contains(&id)))
        })
        .collect();
    let printed = print_with(&listing.sessions, Some(&statuses), json, &place);
    #[allow(clippy::mem_forget)]
    std::mem::forget((listing.sessions, statuses));
    printed
}

fn print(all: &[SessionSummary], json: bool, place: &str) -> Result<ExitCode> {
    print_with(all, None, json, place)
}

/// One session of the JSON listing: its summary and, for local sessions, its status.
#[derive(serde::Serialize)]
struct Row<'a> {
    #[serde(flatten)]
    summary: &'a SessionSummary,
    #[serde(flatten)]
    status: Option<&'a Status>,
}

fn print_with(
    all: &[SessionSummary],
    statuses: Option<&[Status]>,
    json: bool,
    place: &str,
) -> Result<ExitCode> {
    let status_of = |i: usize| statuses.and_then(|s| s.get(i));
    if json {
        let rows: Vec<Row<'_>> = all
            .iter()
            .enumerate()
            .map(|(i, summary)| Row {
                summary,
                status: status_of(i),
            })
            .collect();
        let mut out = std::io::BufWriter::new(std::io::stdout().lock());
        serde_json::to_writer_pretty(&mut out, &rows)?;
        writeln!(out)?;
        out.flush()?;
        return Ok(ExitCode::SUCCESS);
    }
    if all.is_empty() {
        eprintln!("no sessions in {place}");
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    writeln!(
        out,
        "{:<36}  {:<24}  {:>7}  {:>9}  {:<7}  {:<16}  {:<24}  FIRST PROMPT",
        "ID", "UPDATED", "EVENTS", "SIZE", "STATUS", "MODEL", "CWD"
    )?;
    write_rows(&mut out, all, statuses, ROW_WORKERS)?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// Below this many rows, one thread lays them out.
const PARALLEL_ROWS: usize = 1024;
/// Threads laying out rows (the machine's cores, at most this many).
const ROW_WORKERS: usize = 4;

/// The rows of `all` (beside each its status, when given), in order, into `out`: in parts
/// laid out on up to `workers` threads (the machine's cores), the first part written as it
/// is laid out and the others from their buffers after it, so the bytes are those one thread
/// writes.
fn write_rows(
    out: &mut impl Write,
    all: &[SessionSummary],
    statuses: Option<&[Status]>,
    workers: usize,
) -> std::io::Result<()> {
    let workers = if all.len() < PARALLEL_ROWS {
        1
    } else {
        std::thread::available_parallelism().map_or(1, |n| n.get().min(workers))
    };
    let part = all.len().div_ceil(workers.max(1)).max(1);
    std::thread::scope(|s| {
        let mut parts = all.chunks(part).enumerate();
        let first = parts.next();
        let later: Vec<_> = parts
            .map(|(n, rows)| {
                s.spawn(move || {
                    let mut buf = Vec::with_capacity(rows.len() * 192);
                    lay_out(&mut buf, rows, statuses, n * part).map(|()| buf)
                })
            })
            .collect();
        if let Some((_, rows)) = first {
            lay_out(out, rows, statuses, 0)?;
        }
        for worker in later {
            let buf = worker
                .join()
                .map_err(|_| std::io::Error::other("a row thread panicked"))??;
            out.write_all(&buf)?;
        }
        Ok(())
    })
}

/// The rows of `all`, whose first is row `from` of the listing (its status is
/// `statuses[from]`).
fn lay_out(
    out: &mut impl Write,
    all: &[SessionSummary],
    statuses: Option<&[Status]>,
    from: usize,
) -> std::io::Result<()> {
    let status_of = |i: usize| statuses.and_then(|s| s.get(from + i));
    // Each row is laid out by hand into one reused buffer: the same columns as the header's
    // format, without a formatter call and a padding pass per field.
    let mut row = Vec::with_capacity(512);
    let mut cell = Vec::with_capacity(32);
    for (i, s) in all.iter().enumerate() {
        row.clear();
        match s.id {
            Some(id) => pad_right(
                &mut row,
                id.hyphenated()
                    .encode_lower(&mut uuid::Uuid::encode_buffer()),
                36,
            ),
            None => pad_right(&mut row, "", 36),
        }
        row.extend_from_slice(b"  ");
        pad_right(&mut row, s.updated.as_deref().unwrap_or("-"), 24);
        row.extend_from_slice(b"  ");
        cell.clear();
        decimal(&mut cell, s.events);
        pad_left(&mut row, &cell, 7);
        row.extend_from_slice(b"  ");
        cell.clear();
        human_bytes(&mut cell, s.size);
        pad_left(&mut row, &cell, 9);
        row.extend_from_slice(b"  ");
        let status = status_of(i);
        pad_right(&mut row, status.map_or("-", |st| st.status), 7);
        row.extend_from_slice(b"  ");
        pad_right(
            &mut row,
            status.and_then(|st| st.model.as_deref()).unwrap_or("-"),
            16,
        );
        row.extend_from_slice(b"  ");
        pad_right(&mut row, s.cwd.as_deref().unwrap_or("-"), 24);
        row.extend_from_slice(b"  ");
        row.extend_from_slice(s.first_prompt.as_deref().unwrap_or("").as_bytes());
        row.push(b'\n');
        out.write_all(&row)?;
    }
    Ok(())
}

/// Most sessions offered by [`pick`].
const PICK_MAX: usize = 20;

/// The session `run --resume` without an id continues: in a terminal, chosen by its number
/// in a list of the newest sessions; otherwise the list is printed (as `sessions` prints
/// it) and `None` returned, with a line on stderr saying how to name one.
pub fn pick(root: &StateRoot) -> Result<Option<String>> {
    use std::io::IsTerminal;
    let (all, _) = SessionSummary::list_indexed(root)?;
    let all: Vec<SessionSummary> = all.into_iter().filter(|s| s.id.is_some()).collect();
    if !std::io::stdin().is_terminal() || !std::io::stderr().is_terminal() {
        print(&all, false, &root.dir().display().to_string())?;
        eprintln!("give the session to continue: turnstile run --resume ID (an id prefix will do)");
        return Ok(None);
    }
    if all.is_empty() {
        anyhow::bail!("no sessions in {} to continue", root.dir().display());
    }
    let shown = &all[..all.len().min(PICK_MAX)];
    for (n, s) in shown.iter().enumerate() {
        eprintln!(
            "{:>3}  {}  {}  {}",
            n + 1,
            s.updated.as_deref().unwrap_or("-"),
            s.cwd.as_deref().unwrap_or("-"),
            s.first_prompt.as_deref().unwrap_or("")
        );
    }
    eprint!("session to continue (1-{}, empty to cancel): ", shown.len());
    let mut line = String::new();
    std::io::stdin().read_line(&mut line)?;
    let line = line.trim();
    if line.is_empty() {
        return Ok(None);
    }
    let chosen = line
        .parse::<usize>()
        .ok()
        .and_then(|n| n.checked_sub(1))
        .and_then(|i| shown.get(i))
        .and_then(|s| s.id)
        .with_context(|| format!("{line:?} is not one of the numbers 1-{}", shown.len()))?;
    Ok(Some(chosen.to_string()))
}

/// `text` then spaces up to `width` characters (as `{:<width}` pads).
fn pad_right(row: &mut Vec<u8>, text: &str, width: usize) {
    row.extend_from_slice(text.as_bytes());
    let chars = if text.len() >= width && text.is_ascii() {
        text.len()
    } else {
        text.chars().count()
    };
    row.resize(row.len() + width.saturating_sub(chars), b' ');
}

/// Spaces up to `width` bytes, then `ascii` (as `{:>width}` pads an ASCII cell).
fn pad_left(row: &mut Vec<u8>, ascii: &[u8], width: usize) {
    row.resize(row.len() + width.saturating_sub(ascii.len()), b' ');
    row.extend_from_slice(ascii);
}

/// `n` in decimal (as `{}` writes it), without the formatter's machinery.
fn decimal(out: &mut Vec<u8>, n: u64) {
    out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
}

/// Bytes in the largest unit that keeps the number above 1, one decimal (as `{:.1}` writes
/// `n / 1024^unit`, which is exact in an `f64`): the rounding done on integers, the
/// formatter kept for a value exactly halfway between two tenths, whose rounding is its own.
fn human_bytes(out: &mut Vec<u8>, n: u64) {
    const UNITS: [&str; 4] = ["B", "KiB", "MiB", "GiB"];
    let mut unit = 0;
    while unit < UNITS.len() - 1 && n >> (10 * unit) >= 1024 {
        unit += 1;
    }
    if unit == 0 {
        decimal(out, n);
        out.extend_from_slice(b" B");
        return;
    }
    let shift = 10 * unit as u32;
    let tenths = u128::from(n) * 10;
    let (whole, rest) = (tenths >> shift, tenths & ((1u128 << shift) - 1));
    let half = 1u128 << (shift - 1);
    if rest == half || n >= 1 << 53 {
        let value = n as f64 / (1u64 << shift) as f64;
        out.extend_from_slice(format!("{value:.1} {}", UNITS[unit]).as_bytes());
        return;
    }
    let tenths = (whole + u128::from(rest > half)) as u64;
    decimal(out, tenths / 10);
    out.push(b'.');
    out.push(b'0' + (tenths % 10) as u8);
    out.push(b' ');
    out.extend_from_slice(UNITS[unit].as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_laid_out_on_several_threads_are_those_of_one() {
        let all: Vec<SessionSummary> = (0..PARALLEL_ROWS as u64 * 3 + 7)
            .map(|n| SessionSummary {
                id: (n % 11 != 0).then(|| uuid::Uuid::from_u128(u128::from(n) << 64 | 5)),
                cwd: (n % 3 != 0).then(|| format!("/work/«{n}»")),
                created: None,
                updated: Some(format!("2026-12-07T00:00:{:02}.000Z", n % 60)),
                events: n,
                size: n * 977,
                first_prompt: Some(format!("prompt {n}")),
            })
            .collect();
        let statuses: Vec<Status> = (0..all.len() - 5)
            .map(|n| Status {
                status: ["clean", "crashed", "in use"][n % 3],
                model: (n % 2 == 0).then(|| format!("model-{n}")),
            })
            .collect();
        for statuses in [None, Some(&statuses[..])] {
            let mut one = Vec::new();
            lay_out(&mut one, &all, statuses, 0).unwrap();
            for workers in [1, 2, 3, 4] {
                let mut many = Vec::new();
                write_rows(&mut many, &all, statuses, workers).unwrap();
                assert!(many == one, "{workers} workers");
            }
        }
    }

    #[test]
    fn rows_are_laid_out_as_the_format_would() {
        let mut row = Vec::new();
        pad_right(&mut row, "«é»", 5);
        pad_right(&mut row, "abcdef", 3);
        pad_left(&mut row, b"12", 4);
        human_bytes(&mut row, 1023);
        row.push(b'|');
        human_bytes(&mut row, 8230);
        assert_eq!(
            String::from_utf8(row).unwrap(),
            format!("{:<5}{:<3}{:>4}1023 B|8.0 KiB", "«é»", "abcdef", "12")
        );
    }

    /// What `human_bytes` wrote before it laid cells out itself: the formatter over the float.
    fn formatted(n: u64) -> String {
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

    proptest::proptest! {
        #[test]
        fn sizes_and_counts_are_written_as_the_formatter_writes_them(n in proptest::prelude::any::<u64>(), shift in 0u32..64) {
            let n = n >> shift;
            let mut out = Vec::new();
            human_bytes(&mut out, n);
            proptest::prop_assert_eq!(String::from_utf8(out).unwrap(), formatted(n));
            let mut out = Vec::new();
            decimal(&mut out, n);
            proptest::prop_assert_eq!(String::from_utf8(out).unwrap(), n.to_string());
        }
    }

    #[test]
    fn every_size_below_a_few_mebibytes_is_written_as_the_formatter_writes_it() {
        let mut out = Vec::new();
        for n in (0..1u64 << 21).chain([u64::MAX, 1 << 53, (1 << 53) + 1, 5 << 40]) {
            out.clear();
            human_bytes(&mut out, n);
            assert_eq!(std::str::from_utf8(&out).unwrap(), formatted(n), "{n}");
        }
    }
}
