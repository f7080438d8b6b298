//! The first pass: the few numbers the page needs before it draws any turn (the bars' scale,
//! the token chart and the overview sit above the timeline, the lanes set the grid). 32 bytes a
//! turn, and a marker for each thing the overview points at.

use std::fmt;

use crate::items::{Item, Lane, MarkKind, NoteKind, Turn};
use crate::scale::Scale;
use crate::timeline::{OTHER_AGENTS, SessionFacts};

/// Markers the overview remembers; later ones are counted per row only.
pub const MAX_MARKERS: usize = 65_536;
/// Markers per row listed with their text under the overview strip.
pub const JUMPS_PER_ROW: usize = 20;
/// Bytes of a listed marker's text.
pub const JUMP_TEXT_CAP: usize = 100;

/// One turn's numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TurnStat {
    /// The turn's number (`turn-N` on the page).
    pub ordinal: u64,
    /// Start to end, in milliseconds.
    pub total_ms: u64,
    /// Output tokens recorded for the turn.
    pub output_tokens: Option<u64>,
    /// Index into [`Stats::lanes`].
    pub lane: u32,
    /// Whether the page draws it (the first `--max-turns` turns).
    pub drawn: bool,
}

/// Where a link on the page lands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Anchor {
    /// A turn's card, by its number.
    Turn(u64),
    /// A mark, by its place among the marks (0-based).
    Mark(u64),
}

impl fmt::Display for Anchor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Anchor::Turn(n) => write!(f, "turn-{n}"),
            Anchor::Mark(n) => write!(f, "mark-{n}"),
        }
    }
}

/// The overview's rows of markers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Row {
    /// Errors, aborts, crashes, unreadable lines, turns that never ended.
    Problem,
    /// Compactions of the history.
    Compaction,
    /// Model switches.
    ModelChange,
    /// Resumes and shutdowns.
    Resume,
    /// The user's prompts.
    Prompt,
}

impl Row {
    /// Every row, top to bottom.
    pub const ALL: [Row; 5] = [
        Row::Problem,
        Row::Compaction,
        Row::ModelChange,
        Row::Resume,
        Row::Prompt,
    ];

    /// The CSS class suffix and `data-row` value.
    pub fn as_str(self) -> &'static str {
        match self {
            Row::Problem => "problem",
            Row::Compaction => "compaction",
            Row::ModelChange => "model-change",
            Row::Resume => "resume",
            Row::Prompt => "prompt",
        }
    }

    /// The row's label.
    pub fn title(self) -> &'static str {
        match self {
            Row::Problem => "errors",
            Row::Compaction => "compactions",
            Row::ModelChange => "model switches",
            Row::Resume => "resumes, shutdowns",
            Row::Prompt => "prompts",
        }
    }

    fn of_mark(kind: MarkKind) -> Option<Row> {
        match kind {
            MarkKind::Error
            | MarkKind::Abort
            | MarkKind::Crash
            | MarkKind::Unreadable
            | MarkKind::Oversized => Some(Row::Problem),
            MarkKind::Compaction => Some(Row::Compaction),
            MarkKind::ModelChange => Some(Row::ModelChange),
            MarkKind::Resume | MarkKind::Shutdown => Some(Row::Resume),
            MarkKind::Prompt => Some(Row::Prompt),
            MarkKind::Start
            | MarkKind::Nudge
            | MarkKind::TaskComplete
            | MarkKind::Warning
            | MarkKind::Info => None,
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// Something the overview points at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Marker {
    /// Its row.
    pub row: Row,
    /// Turns ended before it: its place on the strip.
    pub at: usize,
    /// Where its link lands; `None` for a turn the page does not draw.
    pub anchor: Option<Anchor>,
    /// Its journal line.
    pub line: u64,
    /// What it is, for the list under the strip (kept for the first [`JUMPS_PER_ROW`] of a row).
    pub text: String,
}

/// What the first pass collects.
#[derive(Debug, Clone, PartialEq)]
pub struct Stats {
    /// Turns in the order they ended.
    pub turns: Vec<TurnStat>,
    /// Lanes in order of first appearance; the main agent's (`None`) is always first.
    pub lanes: Vec<Lane>,
    /// What each lane is called, by index into `lanes` (see [`Stats::name_lanes`]).
    pub lane_names: Vec<String>,
    /// The scale of the turns' duration bars (see [`Stats::finish`]).
    pub durations: Scale,
    /// Crashes seen (a resume after a process that did not shut down).
    pub crashes: u64,
    /// Lines the reader could not read or whose data does not fit their type.
    pub unreadable: u64,
    /// Marks seen: the next mark's [`Anchor::Mark`].
    pub marks: u64,
    /// The overview's markers (at most [`MAX_MARKERS`]).
    pub markers: Vec<Marker>,
    /// Markers per row, including those beyond [`MAX_MARKERS`].
    pub row_counts: [u64; Row::ALL.len()],
    /// Turns the page draws (`--max-turns`).
    pub max_turns_drawn: u64,
}

impl Stats {
    /// Empty stats with the main lane, for a page that draws `max_turns_drawn` turns.
    pub fn new(max_turns_drawn: u64) -> Self {
        Stats {
            turns: Vec::new(),
            lanes: vec![None],
            lane_names: Vec::new(),
            durations: Scale::of([]),
            crashes: 0,
            unreadable: 0,
            marks: 0,
            markers: Vec::new(),
            row_counts: [0; Row::ALL.len()],
            max_turns_drawn,
        }
    }

    /// Counts one item.
    pub fn add(&mut self, item: &Item) {
        match item {
            Item::Turn(turn) => self.add_turn(turn),
            Item::Mark(mark) => {
                self.lane_index(&mark.lane);
                match mark.kind {
                    MarkKind::Crash => self.crashes += 1,
                    MarkKind::Unreadable | MarkKind::Oversized => self.unreadable += 1,
                    _ => {}
                }
                let anchor = Anchor::Mark(self.marks);
                self.marks += 1;
                if let Some(row) = Row::of_mark(mark.kind) {
                    self.mark(row, Some(anchor), mark.line, &mark.text.shown);
                }
            }
        }
    }

    fn add_turn(&mut self, turn: &Turn) {
        let lane = self.lane_index(&turn.lane);
        let drawn = (self.turns.len() as u64) < self.max_turns_drawn;
        let anchor = drawn.then_some(Anchor::Turn(turn.ordinal));
        // One marker per row and turn: the first note that calls for it.
        let problem = turn
            .notes
            .iter()
            .find(|n| matches!(n.kind, NoteKind::Error | NoteKind::Abort));
        match problem {
            Some(note) => self.mark(Row::Problem, anchor, note.line, &note.text.shown),
            None if !turn.ended => {
                self.mark(Row::Problem, anchor, turn.line, "the turn never ended")
            }
            None => {}
        }
        if let Some(note) = turn.notes.iter().find(|n| n.kind == NoteKind::Compaction) {
            self.mark(Row::Compaction, anchor, note.line, &note.text.shown);
        }
        self.turns.push(TurnStat {
            ordinal: turn.ordinal,
            total_ms: turn.total_ms,
            output_tokens: turn.output_tokens,
            lane,
            drawn,
        });
    }

    fn mark(&mut self, row: Row, anchor: Option<Anchor>, line: u64, text: &str) {
        let count = &mut self.row_counts[row.index()];
        *count += 1;
        if self.markers.len() >= MAX_MARKERS {
            return;
        }
        let text = if *count as usize <= JUMPS_PER_ROW {
            crate::escape::clip(text, JUMP_TEXT_CAP).0.to_owned()
        } else {
            String::new()
        };
        self.markers.push(Marker {
            row,
            at: self.turns.len(),
            anchor,
            line,
            text,
        });
    }

    /// After the first pass: the bars' scale and the lanes' names.
    pub fn finish(&mut self, facts: &SessionFacts) {
        self.durations = Scale::of(self.turns.iter().map(|t| t.total_ms));
        self.lane_names = self
            .lanes
            .iter()
            .map(|lane| match lane.as_deref() {
                None => "main agent".to_owned(),
                Some(OTHER_AGENTS) => OTHER_AGENTS.to_owned(),
                Some(id) => facts
                    .agents
                    .get(id)
                    .and_then(|a| a.label())
                    .unwrap_or_else(|| id.to_owned()),
            })
            .collect();
    }

    /// What `lane` is called.
    pub fn lane_name(&self, lane: &Lane) -> &str {
        self.lane_names
            .get(self.column(lane) - 1)
            .map_or("main agent", String::as_str)
    }

    /// The index of `lane`, added when new.
    pub fn lane_index(&mut self, lane: &Lane) -> u32 {
        let i = match self.lanes.iter().position(|l| l == lane) {
            Some(i) => i,
            None => {
                self.lanes.push(lane.clone());
                self.lanes.len() - 1
            }
        };
        u32::try_from(i).unwrap_or(u32::MAX)
    }

    /// The 1-based grid column of `lane` (lanes unknown to the first pass share the last one).
    pub fn column(&self, lane: &Lane) -> usize {
        self.lanes
            .iter()
            .position(|l| l == lane)
            .unwrap_or(self.lanes.len().saturating_sub(1))
            + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::items::{Clipped, Mark, Note};

    fn mark(kind: MarkKind, line: u64) -> Item {
        Item::Mark(Mark {
            kind,
            line,
            lane: None,
            text: Clipped::new("m", 10),
        })
    }

    fn turn(ordinal: u64, notes: Vec<Note>) -> Item {
        Item::Turn(Turn {
            ordinal,
            line: ordinal * 10,
            ended: true,
            notes,
            ..Turn::default()
        })
    }

    #[test]
    fn markers_point_at_marks_by_number_and_at_drawn_turns_only() {
        let mut stats = Stats::new(1);
        let error = Note {
            kind: NoteKind::Error,
            line: 15,
            text: Clipped::new("boom", 10),
            bad: true,
        };
        for item in [
            mark(MarkKind::Start, 1),
            mark(MarkKind::Prompt, 2),
            turn(1, vec![error.clone()]),
            mark(MarkKind::ModelChange, 30),
            turn(2, vec![error]),
            mark(MarkKind::Nudge, 40),
            mark(MarkKind::Compaction, 41),
        ] {
            stats.add(&item);
        }
        let got: Vec<(Row, usize, Option<Anchor>)> = stats
            .markers
            .iter()
            .map(|m| (m.row, m.at, m.anchor))
            .collect();
        assert_eq!(
            got,
            [
                (Row::Prompt, 0, Some(Anchor::Mark(1))),
                (Row::Problem, 0, Some(Anchor::Turn(1))),
                (Row::ModelChange, 1, Some(Anchor::Mark(2))),
                // Turn 2 is beyond `--max-turns 1`: marked, not linked.
                (Row::Problem, 1, None),
                (Row::Compaction, 2, Some(Anchor::Mark(4))),
            ]
        );
        assert_eq!(stats.marks, 5);
        assert_eq!(stats.row_counts[Row::Problem as usize], 2);
        assert_eq!(Anchor::Mark(4).to_string(), "mark-4");
    }
}
