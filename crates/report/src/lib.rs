//! `turnstile-report`: one session journal as one self-contained HTML page.
//!
//! The page shows the session as a timeline: each turn (LLM call) a bar split into model time
//! and tool time, its tool calls with their arguments and folded results, permissions and
//! hooks, errors, aborts, resumes, crashes, compactions and model switches marked, sub-agents
//! (the envelope's `agentId`) in lanes of their own under their names, output tokens per turn
//! as an inline SVG chart with its axes, an overview strip of the whole session with links to
//! its errors, compactions and switches, and the audit's counts and violations at the top. No script, no external file, and a content policy that forbids
//! both: journal text is hostile, so every byte of it is escaped.
//!
//! Memory does not follow the journal: the audit streams (`turnstile-replay`), the timeline
//! holds only open turns with clipped texts, and the page is written item by item. The journal
//! is read twice: once for the numbers the top of the page needs (scale, chart, overview, lanes
//! and their names), once to draw.
//!
//! (The unit test `tests::a_fixture_gives_a_page` runs these lines on a fixture.)
//!
//! ```ignore
//! let mut page = Vec::new();
//! let summary = turnstile_report::write_report(
//!     std::path::Path::new("events.jsonl"),
//!     &mut page,
//!     &turnstile_report::ReportOptions::default(),
//! )?;
//! println!("{} turns drawn", summary.turns_drawn);
//! # Ok::<(), turnstile_report::ReportError>(())
//! ```

mod axis;
mod chart;
mod draw;
mod error;
mod escape;
pub mod items;
mod overview;
mod page;
mod scale;
mod stats;
pub mod timeline;

use std::io::{self, Write};
use std::path::Path;

use turnstile_journal::{JournalReader, ReadMode};

pub use error::ReportError;
pub use escape::{Escaped, clip, text};
use items::Item;
use stats::{Anchor, Stats};
use timeline::Timeline;

/// Turns drawn in full by default; later ones are counted in the chart and the audit only, so
/// that the page stays one a browser opens quickly.
pub const DEFAULT_MAX_TURNS_DRAWN: u64 = 2500;

/// How much to draw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportOptions {
    /// Turns drawn in full (in the order they end); the rest are counted.
    pub max_turns_drawn: u64,
}

impl Default for ReportOptions {
    fn default() -> Self {
        ReportOptions {
            max_turns_drawn: DEFAULT_MAX_TURNS_DRAWN,
        }
    }
}

/// What a report showed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReportSummary {
    /// Turns in the journal.
    pub turns: u64,
    /// Turns drawn.
    pub turns_drawn: u64,
    /// Lanes (the main agent and each sub-agent).
    pub lanes: usize,
    /// The audit's violation count.
    pub violations: u64,
    /// Bytes of HTML written.
    pub bytes: u64,
}

/// Writes the report of the journal at `journal` to `out`.
pub fn write_report(
    journal: &Path,
    out: &mut impl Write,
    options: &ReportOptions,
) -> Result<ReportSummary, ReportError> {
    let audit = turnstile_replay::audit_file(journal)?;
    let mut stats = Stats::new(options.max_turns_drawn);
    let facts = each_item(journal, |item| stats.add(item))?;
    stats.finish(&facts);
    let mut sink = Sink {
        out,
        html: String::new(),
        bytes: 0,
    };
    page::write_head(&mut sink.html, &facts, &audit, &stats).map_err(fmt_error)?;
    sink.flush()?;
    let mut drawn = 0u64;
    let mut left_out = 0u64;
    // Marks are numbered as the first pass numbered them, so the overview's links land.
    let mut marks = 0u64;
    let mut failure = None;
    each_item(journal, |item| {
        if failure.is_some() {
            return;
        }
        let written = match item {
            Item::Turn(turn) if drawn < options.max_turns_drawn => {
                drawn += 1;
                draw::write_turn(&mut sink.html, turn, &stats)
            }
            Item::Turn(_) => {
                left_out += 1;
                Ok(())
            }
            Item::Mark(mark) => {
                marks += 1;
                draw::write_mark(&mut sink.html, mark, Anchor::Mark(marks - 1), &stats)
            }
        };
        if let Err(e) = written.map_err(fmt_error).and_then(|()| sink.flush()) {
            failure = Some(e);
        }
    })?;
    if let Some(e) = failure {
        return Err(e.into());
    }
    page::write_tail(&mut sink.html, left_out).map_err(fmt_error)?;
    sink.flush()?;
    sink.out.flush()?;
    Ok(ReportSummary {
        turns: stats.turns.len() as u64,
        turns_drawn: drawn,
        lanes: stats.lanes.len(),
        violations: audit.violation_count,
        bytes: sink.bytes,
    })
}

/// Reads the journal once, handing each finished item to `f`; returns the session's facts.
fn each_item(
    journal: &Path,
    mut f: impl FnMut(&Item),
) -> Result<timeline::SessionFacts, ReportError> {
    let reader = JournalReader::open(journal, ReadMode::Lenient)?;
    let mut timeline = Timeline::new();
    let mut items = Vec::new();
    for record in reader {
        timeline.push(record, &mut items);
        items.drain(..).for_each(|item| f(&item));
    }
    timeline.finish(&mut items);
    items.drain(..).for_each(|item| f(&item));
    Ok(timeline.facts().clone())
}

/// The HTML of one item at a time on its way to the output.
struct Sink<'a, W: Write> {
    out: &'a mut W,
    html: String,
    bytes: u64,
}

impl<W: Write> Sink<'_, W> {
    fn flush(&mut self) -> io::Result<()> {
        self.out.write_all(self.html.as_bytes())?;
        self.bytes += self.html.len() as u64;
        self.html.clear();
        Ok(())
    }
}

/// Writing into a `String` fails only if a `Display` impl does; name it as an I/O error.
fn fmt_error(_: std::fmt::Error) -> io::Error {
    io::Error::other("formatting the page failed")
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_fixture_gives_a_page() {
        let journal = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/multi-turn/events.jsonl");
        let mut page = Vec::new();
        let summary =
            crate::write_report(&journal, &mut page, &crate::ReportOptions::default()).unwrap();
        assert_eq!(summary.turns_drawn, 8);
        let page = String::from_utf8(page).unwrap();
        assert!(page.starts_with("<!DOCTYPE html>"), "{}", &page[..64]);
    }
}
