//! The walk: both journals step by step in lockstep, each step compared with the other's,
//! until the first that differs or both end.
//!
//! Steps align because each journal's steps come in session order: the request of LLM call
//! N, then what the model answered, then each tool call and its result, then the next
//! request. A removed turn, an added event or a changed argument shows where the two
//! sequences first disagree. A request is compared from the fold of each journal: the
//! messages the call sent, from the first one not yet compared (the conversation grows by
//! appends between calls; after a compaction, a truncation, a rewind or a result of an
//! older call on either side, from the first message again), so two sessions of N calls cost
//! N, not N², message comparisons.

use std::path::Path;

use serde_json::Value;

use crate::error::DiffError;
use crate::first_difference::first_difference;
use crate::profile::{Profile, Runtime};
use crate::report::{At, Compared, Divergence, DivergenceKind, Journal, Report, describe};
use crate::side::{Side, Step, StepKind};

/// How to compare.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// The profile; `None`: chosen from the journals' runtimes ([`Profile::for_runtimes`]).
    pub profile: Option<Profile>,
    /// More paths that stand for the working directory in both journals (`<cwd>`): a replay
    /// sends the recording's system prompt, which names the recording's directory.
    pub cwd_aliases: Vec<String>,
}

/// Compares the journals at `a` and `b` and reports their first divergence.
pub fn diff_files(a: &Path, b: &Path, options: &Options) -> Result<Report, DiffError> {
    let runtimes = (Runtime::of(a)?, Runtime::of(b)?);
    let profile = options
        .profile
        .unwrap_or_else(|| Profile::for_runtimes(runtimes.0, runtimes.1));
    let mut sides = (
        Side::open(a, profile, &options.cwd_aliases)?,
        Side::open(b, profile, &options.cwd_aliases)?,
    );
    let mut requests = Requests::default();
    let mut compared = Compared::default();
    let divergence = loop {
        let (x, y) = (sides.0.next_step()?, sides.1.next_step()?);
        let found = match (x, y) {
            (None, None) => break None,
            (Some(x), None) => Some(ended(DivergenceKind::BEnds, &x)),
            (None, Some(y)) => Some(ended(DivergenceKind::AEnds, &y)),
            (Some(x), Some(y)) => compare(&x, &y, &mut sides, &mut requests),
        };
        if found.is_some() {
            break found;
        }
        compared.steps += 1;
        // `x` is gone: read A's count where it stands.
        compared.llm_calls = sides.0.place().llm_call;
        compared.tool_calls = sides.0.place().tool_call;
    };
    Ok(Report {
        a: Journal {
            path: a.to_path_buf(),
            runtime: runtimes.0,
        },
        b: Journal {
            path: b.to_path_buf(),
            runtime: runtimes.1,
        },
        profile,
        same: divergence.is_none(),
        compared,
        divergence,
    })
}

/// The divergence where one journal has ended and the other has `step`.
fn ended(kind: DivergenceKind, step: &Step) -> Divergence {
    let shown = at(step, None);
    let (who, other) = match kind {
        DivergenceKind::AEnds => ("A", "B"),
        _ => ("B", "A"),
    };
    let message = format!(
        "{who} ends where {other} has the {} (line {})",
        describe(&shown),
        step.place.line
    );
    let (a, b) = match kind {
        DivergenceKind::AEnds => (None, Some(shown)),
        _ => (Some(shown), None),
    };
    Divergence {
        kind,
        field: None,
        a,
        b,
        message,
    }
}

fn at(step: &Step, value: Option<Value>) -> At {
    At {
        place: step.place.clone(),
        event_type: step.event_type.clone(),
        step: step.kind,
        tool: step.tool.clone(),
        value,
    }
}

/// The divergence between two steps, if they differ.
fn compare(
    x: &Step,
    y: &Step,
    sides: &mut (Side, Side),
    requests: &mut Requests,
) -> Option<Divergence> {
    if x.kind != y.kind || x.event_type != y.event_type {
        let (a, b) = (at(x, None), at(y, None));
        let message = format!(
            "A has the {} where B has the {}",
            describe(&a),
            describe(&b)
        );
        return Some(Divergence {
            kind: DivergenceKind::Step,
            field: None,
            a: Some(a),
            b: Some(b),
            message,
        });
    }
    let (field, va, vb) = if x.kind == StepKind::Request {
        requests.compare(&mut sides.0, &mut sides.1)?
    } else {
        let d = first_difference("", &x.value, &y.value)?;
        (d.path, d.a, d.b)
    };
    let (a, b) = (at(x, va), at(y, vb));
    let what = describe(&a);
    let message = match x.kind {
        StepKind::Request => format!("the {what} differs in {field}"),
        _ if describe(&b) != what => {
            format!("the {what} (B: the {}) differs in {field}", describe(&b))
        }
        _ => format!("the {what} differs in {field}"),
    };
    Some(Divergence {
        kind: DivergenceKind::of(x.kind),
        field: Some(field),
        a: Some(a),
        b: Some(b),
        message,
    })
}

/// The messages of both conversations compared so far (see the module doc).
#[derive(Debug, Default)]
struct Requests {
    done: (usize, usize),
}

impl Requests {
    /// The first difference between the conversations the two open calls send: the field
    /// (`messages[i]…`, `i` counting A's messages) and each side's value.
    fn compare(
        &mut self,
        a: &mut Side,
        b: &mut Side,
    ) -> Option<(String, Option<Value>, Option<Value>)> {
        // Both, not either: each side's flag is cleared for the next call.
        if a.take_rewritten() | b.take_rewritten() {
            self.done = (0, 0);
        }
        let (len_a, len_b) = (a.conversation_len(), b.conversation_len());
        let (mut i, mut j) = self.done;
        loop {
            while i < len_a && !a.compares_message(i) {
                i += 1;
            }
            while j < len_b && !b.compares_message(j) {
                j += 1;
            }
            match (i < len_a, j < len_b) {
                (false, false) => break,
                (true, true) => {
                    let (x, y) = (a.message(i), b.message(j));
                    if let Some(d) = first_difference("", &x, &y) {
                        let field = if d.path.is_empty() {
                            format!("messages[{i}]")
                        } else {
                            format!("messages[{i}].{}", d.path)
                        };
                        return Some((field, d.a, d.b));
                    }
                }
                (true, false) => {
                    return Some((format!("messages[{i}]"), Some(a.message(i)), None));
                }
                (false, true) => {
                    return Some((format!("messages[{i}]"), None, Some(b.message(j))));
                }
            }
            i += 1;
            j += 1;
        }
        self.done = (len_a, len_b);
        None
    }
}
