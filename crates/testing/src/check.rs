//! Comparing a replayed journal with its recording (the rules are in `docs/fixtures.md`).
//!
//! Before comparing, every string in the replayed journal gets the replay's working directory
//! written back as the recorded one (the substitution the replay provider made in the other
//! direction). Then, with the strict profile, event `i` of the replay is compared with event
//! `i` of the recording: same type, same `agentId`, same `data` except the volatile fields of
//! [`turnstile_diff::volatile`]; with the behaviour profile, the same is done on the facts of
//! [`crate::behaviour`]. Every differing field of an event is a divergence; an event of another
//! type, or one side ending first, is a divergence that ends the comparison (what follows it
//! is no longer aligned). A `session.error` the replay's provider raised for want of a recorded
//! answer is reported as such. The replayed journal is read without its rewind markers and
//! what they removed, as the Copilot runtime's file shows a truncation.

use std::collections::HashMap;
use std::fmt;
use std::path::PathBuf;

use serde::Serialize;
use serde_json::{Value, json};
use turnstile_journal::Uuid;
use turnstile_providers::ReplayProvider;
use turnstile_tools::ToolRegistry;

use crate::behaviour::{ResumeWindow, fact};
use crate::diff::diff_values;
use crate::divergence::{Divergence, DivergenceKind, LineRef};
use crate::error::FixtureError;
use crate::fixture::Fixture;
use crate::history_fit::HistoryFit;
use crate::journal::{JournalLine, read_journal};
use crate::manifest::Profile;
use crate::runner::ReplayRun;
use crate::turns::{TurnRef, turn_refs};
use turnstile_diff::volatile::{is_volatile_event, strip_volatile};

/// Divergences kept at most (the first is the one that matters; the rest follow from it).
pub const MAX_DIVERGENCES: usize = 200;

/// The result of replaying a fixture and comparing.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckReport {
    /// The fixture, as named.
    pub fixture: String,
    /// The recorded journal.
    pub recording: PathBuf,
    /// The replayed journal (none when the replay could not run).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub journal: Option<PathBuf>,
    /// The replayed session.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<Uuid>,
    /// How the journals were compared.
    pub profile: Profile,
    /// Events (strict) or facts (behaviour) of the recording that were compared.
    pub compared: usize,
    /// LLM calls the recording made.
    pub llm_calls: usize,
    /// Tool calls the recording made.
    pub tool_calls: usize,
    /// The differences, in journal order (at most [`MAX_DIVERGENCES`]).
    pub divergences: Vec<Divergence>,
    /// When the check failed: the first divergence `turnstile diff RECORDING REPLAYED` finds
    /// (A the recording, B the replay), under the fixture's profile; none when the diff
    /// finds none (a difference only the check looks for, such as a missing tool).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_divergence: Option<turnstile_diff::Divergence>,
}

impl CheckReport {
    /// True when the replay did exactly what the recording shows.
    pub fn passed(&self) -> bool {
        self.divergences.is_empty()
    }

    /// The first divergence, if any.
    pub fn first(&self) -> Option<&Divergence> {
        self.divergences.first()
    }

    /// A report for a replay that could not run, with the reasons as divergences.
    pub fn not_run(fixture: &Fixture, divergences: Vec<Divergence>) -> Self {
        CheckReport {
            journal: None,
            session_id: None,
            compared: 0,
            divergences,
            ..Self::empty(fixture)
        }
    }

    fn empty(fixture: &Fixture) -> Self {
        CheckReport {
            fixture: fixture.name().to_owned(),
            recording: fixture.journal_path().to_path_buf(),
            journal: None,
            session_id: None,
            profile: fixture.profile(),
            first_divergence: None,
            compared: 0,
            llm_calls: fixture.llm_calls(),
            tool_calls: fixture
                .lines()
                .iter()
                .filter(|l| l.is_top_level() && l.event_type() == "tool.execution_start")
                .count(),
            divergences: Vec::new(),
        }
    }
}

impl fmt::Display for CheckReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let unit = match self.profile {
            Profile::Strict => "events",
            Profile::Behaviour => "behaviour facts",
        };
        let Some(first) = self.first() else {
            return writeln!(
                f,
                "ok: the replay matches the recording ({} {unit} compared, {} profile; {} LLM call{}, {} tool call{})",
                self.compared,
                self.profile.as_str(),
                self.llm_calls,
                if self.llm_calls == 1 { "" } else { "s" },
                self.tool_calls,
                if self.tool_calls == 1 { "" } else { "s" },
            );
        };
        writeln!(
            f,
            "FAILED: the replay diverged from the recording {}",
            self.fixture
        )?;
        write!(f, "{first}")?;
        let notable: Vec<&Divergence> = self.divergences[1..]
            .iter()
            .filter(|d| {
                matches!(
                    d.kind,
                    DivergenceKind::OutOfAnswers
                        | DivergenceKind::ToolMissing
                        | DivergenceKind::History
                )
            })
            .collect();
        for d in &notable {
            writeln!(f, "then, at {}: {}", d.turn, d.message)?;
        }
        if let (Some(d), Some(journal)) = (&self.first_divergence, &self.journal) {
            writeln!(
                f,
                "as `turnstile diff {} {}` shows it (A the recording, B the replay):",
                self.recording.display(),
                journal.display()
            )?;
            write!(f, "{d}")?;
        }
        let rest = self.divergences.len() - 1 - notable.len();
        if rest > 0 {
            writeln!(
                f,
                "and {rest} more difference{} after the first (--json lists them)",
                if rest == 1 { "" } else { "s" }
            )?;
        }
        Ok(())
    }
}

/// A divergence for each tool the recording ran that `tools` lacks.
pub fn missing_tools(fixture: &Fixture, tools: &ToolRegistry) -> Vec<Divergence> {
    let refs = turn_refs(fixture.lines());
    let available = tools.names().join(", ");
    fixture
        .tools_used()
        .into_iter()
        .filter(|(name, _)| tools.get(name).is_none())
        .filter_map(|(name, line)| {
            let index = fixture.lines().iter().position(|l| l.number == line)?;
            let recorded = &fixture.lines()[index];
            Some(Divergence {
                kind: DivergenceKind::ToolMissing,
                turn: refs[index].clone(),
                event_type: recorded.event_type().to_owned(),
                field: None,
                recorded: Some(line_ref(fixture.journal_path().into(), recorded)),
                replayed: None,
                recorded_value: None,
                replayed_value: None,
                message: format!(
                    "the recording calls tool `{name}`, which this engine does not have (it has: {available})"
                ),
            })
        })
        .collect()
}

/// `lines` as the Copilot runtime's file would show them: without rewind markers and the events
/// they removed (the runtime cuts its file where turnstile appends a marker; no recording
/// holds a marker).
fn as_the_runtime_shows(lines: Vec<JournalLine>) -> Vec<JournalLine> {
    let hidden = turnstile_replay::hidden_ids(lines.iter().map(|l| &l.event));
    if hidden.is_empty() {
        return lines;
    }
    lines
        .into_iter()
        .filter(|l| !hidden.contains(&l.event.id))
        .collect()
}

/// Compares the journal of `run` with the recording of `fixture`.
pub fn check_run(fixture: &Fixture, run: &ReplayRun) -> Result<CheckReport, FixtureError> {
    let replayed = as_the_runtime_shows(read_journal(&run.journal)?);
    let workdir = run.workdir.display().to_string();
    let session_id = run.session_id.to_string();
    let normalise = |data: &mut Value| {
        if let Some(recorded) = fixture.recorded_cwd() {
            ReplayProvider::rewrite_paths(data, &workdir, recorded);
        }
        // The session's id is part of texts the loop writes (a sub-agent's task comes from
        // `agent-<session id>`); the replay runs under an id of its own.
        if let Some(recorded) = fixture.recorded_session_id() {
            ReplayProvider::rewrite_paths(data, &session_id, recorded);
        }
    };
    let recorded_side = Side::new(
        fixture.journal_path().into(),
        fixture.lines(),
        fixture.profile(),
        |_| {},
    );
    let replayed_side = Side::new(run.journal.clone(), &replayed, fixture.profile(), normalise);

    let mut report = CheckReport {
        journal: Some(run.journal.clone()),
        session_id: Some(run.session_id),
        compared: recorded_side.items.len(),
        ..CheckReport::empty(fixture)
    };
    let divergences = &mut report.divergences;
    for i in 0..recorded_side.items.len().max(replayed_side.items.len()) {
        if divergences.len() >= MAX_DIVERGENCES {
            break;
        }
        match (recorded_side.items.get(i), replayed_side.items.get(i)) {
            (Some(rec), Some(rep)) if rec.kind != rep.kind => {
                divergences.push(Divergence {
                    kind: DivergenceKind::EventType,
                    turn: recorded_side.turn(rec),
                    event_type: rec.kind.clone(),
                    field: Some("type".into()),
                    recorded: Some(recorded_side.line_ref(rec)),
                    replayed: Some(replayed_side.line_ref(rep)),
                    recorded_value: Some(json!(rec.kind)),
                    replayed_value: Some(json!(rep.kind)),
                    message: format!(
                        "the replay wrote {} where the recording has {}",
                        rep.kind, rec.kind
                    ),
                });
                break;
            }
            (Some(rec), Some(rep)) => {
                let mut fields = Vec::new();
                diff_values("", &rec.value, &rep.value, &mut fields);
                for d in fields {
                    let field = d.path.trim_start_matches('.').to_owned();
                    divergences.push(Divergence {
                        kind: DivergenceKind::Field,
                        turn: recorded_side.turn(rec),
                        event_type: rec.kind.clone(),
                        message: format!("{} differs in {field}", rec.kind),
                        field: Some(field),
                        recorded: Some(recorded_side.line_ref(rec)),
                        replayed: Some(replayed_side.line_ref(rep)),
                        recorded_value: d.recorded,
                        replayed_value: d.replayed,
                    });
                }
            }
            (Some(rec), None) => {
                let left = recorded_side.items.len() - i;
                divergences.push(Divergence {
                    kind: DivergenceKind::Missing,
                    turn: recorded_side.turn(rec),
                    event_type: rec.kind.clone(),
                    field: None,
                    recorded: Some(recorded_side.line_ref(rec)),
                    replayed: None,
                    recorded_value: None,
                    replayed_value: None,
                    message: format!(
                        "the replay ended where the recording has {} ({left} more to come)",
                        rec.kind
                    ),
                });
                break;
            }
            (None, Some(rep)) => {
                let extra = replayed_side.items.len() - i;
                divergences.push(Divergence {
                    kind: DivergenceKind::Extra,
                    turn: replayed_side.turn(rep),
                    event_type: rep.kind.clone(),
                    field: None,
                    recorded: None,
                    replayed: Some(replayed_side.line_ref(rep)),
                    recorded_value: None,
                    replayed_value: None,
                    message: format!(
                        "the replay wrote {} after the end of the recording ({extra} more)",
                        rep.kind
                    ),
                });
                break;
            }
            (None, None) => break,
        }
    }
    out_of_answers(&replayed_side, &recorded_side, divergences);
    if fixture.profile() == Profile::Behaviour {
        history_fit(&recorded_side, &replayed_side, divergences);
    }
    if !report.passed() {
        report.first_divergence = first_divergence(fixture, run)?;
    }
    Ok(report)
}

/// The first divergence `turnstile diff` finds between the recording and the replay.
fn first_divergence(
    fixture: &Fixture,
    run: &ReplayRun,
) -> Result<Option<turnstile_diff::Divergence>, FixtureError> {
    let options = turnstile_diff::Options {
        profile: Some(fixture.profile()),
        cwd_aliases: fixture
            .recorded_cwd()
            .map(str::to_owned)
            .into_iter()
            .collect(),
    };
    let report = turnstile_diff::diff_files(fixture.journal_path(), &run.journal, &options)?;
    Ok(report.divergence)
}

/// Adds a divergence when the replay kept the main agent's history in its window otherwise
/// than the recording: other compaction outcomes or other truncations.
fn history_fit(recorded: &Side<'_>, replayed: &Side<'_>, divergences: &mut Vec<Divergence>) {
    let (rec, rep) = (
        HistoryFit::of(recorded.lines),
        HistoryFit::of(replayed.lines),
    );
    if rec.same_as(&rep) {
        return;
    }
    let turn = match (rec.first, rep.first) {
        (Some(i), _) => recorded.refs[i].clone(),
        (None, Some(i)) => replayed.refs[i].clone(),
        (None, None) => TurnRef::default(),
    };
    divergences.push(Divergence {
        kind: DivergenceKind::History,
        turn,
        event_type: "session.compaction_complete".into(),
        field: None,
        recorded: rec.first.map(|i| line_ref(recorded.path.clone(), &recorded.lines[i])),
        replayed: rep.first.map(|i| line_ref(replayed.path.clone(), &replayed.lines[i])),
        recorded_value: None,
        replayed_value: None,
        message: format!(
            "the history was kept in the window otherwise: the recording has {rec}, the replay {rep}"
        ),
    });
}

/// Adds a divergence for the `session.error` the replay provider raised when it had no
/// recorded answer, unless the recording has the same error.
fn out_of_answers(replayed: &Side<'_>, recorded: &Side<'_>, divergences: &mut Vec<Divergence>) {
    let recorded_errors: Vec<Value> = recorded
        .lines
        .iter()
        .filter(|l| l.event_type() == "session.error")
        .map(|l| l.data()["message"].clone())
        .collect();
    for (index, line) in replayed.lines.iter().enumerate() {
        if line.event_type() != "session.error" {
            continue;
        }
        let data = line.data();
        if data["errorType"] != "fixture" {
            continue;
        }
        let message = data["message"].as_str().unwrap_or_default();
        if recorded_errors.iter().any(|r| r == &data["message"]) {
            continue;
        }
        divergences.push(Divergence {
            kind: DivergenceKind::OutOfAnswers,
            turn: replayed.refs[index].clone(),
            event_type: "session.error".into(),
            field: None,
            recorded: None,
            replayed: Some(line_ref(replayed.path.clone(), line)),
            recorded_value: None,
            replayed_value: None,
            message: format!(
                "the conversation ran out of recorded answers: the replay made LLM call {} and {message}",
                replayed.refs[index].llm_call
            ),
        });
        return;
    }
}

/// One side of the comparison: its lines and the items compared.
struct Side<'a> {
    path: PathBuf,
    lines: &'a [JournalLine],
    refs: Vec<TurnRef>,
    items: Vec<Item>,
}

/// One compared item: an event (strict) or a fact (behaviour), and the line it came from.
struct Item {
    index: usize,
    kind: String,
    value: Value,
}

impl<'a> Side<'a> {
    fn new(
        path: PathBuf,
        lines: &'a [JournalLine],
        profile: Profile,
        normalise: impl Fn(&mut Value),
    ) -> Self {
        let mut tools = HashMap::new();
        let mut items = Vec::new();
        let mut resumed = ResumeWindow::default();
        for (index, line) in lines.iter().enumerate() {
            let mut data = line.data();
            normalise(&mut data);
            let kind = line.event_type().to_owned();
            let closes_left_over = resumed.closes_left_over(&kind, line.is_top_level());
            let value = match profile {
                Profile::Strict if is_volatile_event(&kind, &data) => continue,
                Profile::Strict => {
                    strip_volatile(&kind, &mut data);
                    let mut value = json!({"data": data});
                    if let Some(agent) = &line.event.agent_id {
                        value["agentId"] = json!(agent);
                    }
                    value
                }
                Profile::Behaviour if closes_left_over => continue,
                Profile::Behaviour => match fact(line, &data, &mut tools) {
                    Some(fact) => json!({"data": fact}),
                    None => continue,
                },
            };
            items.push(Item { index, kind, value });
        }
        Side {
            path,
            refs: turn_refs(lines),
            lines,
            items,
        }
    }

    fn turn(&self, item: &Item) -> TurnRef {
        self.refs[item.index].clone()
    }

    fn line_ref(&self, item: &Item) -> LineRef {
        line_ref(self.path.clone(), &self.lines[item.index])
    }
}

fn line_ref(path: PathBuf, line: &JournalLine) -> LineRef {
    LineRef {
        path,
        line: line.number,
        text: line.text.clone(),
    }
}
