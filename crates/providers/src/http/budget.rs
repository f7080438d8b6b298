//! The budget of one streamed answer: its bytes (text, tool call arguments, and a charge for
//! every tool call it opens) against `max_answer_bytes`, and its tool calls against
//! `max_tool_calls`. Every wire counts through it, so a stream of new tool-call indexes with
//! empty arguments ends like a stream of endless text, and the budget's growth is the one
//! measure of useful progress the idle timeout watches (`provider.rs`).

use super::config::ResponseLimits;
use crate::{ModelError, ModelErrorKind};

/// What a streamed answer has spent so far.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct AnswerBudget {
    /// Bytes counted (text, arguments, the charge of each call, room held).
    size: usize,
    /// Bytes of answer: text, arguments and calls (what is held for room only, as an empty
    /// choice, is not progress).
    answered: usize,
    /// Tool calls opened.
    calls: usize,
    /// The answer finished (a finish reason or the end event came).
    finished: bool,
    max_answer: usize,
    max_calls: usize,
}

impl AnswerBudget {
    /// An empty budget under `limits`.
    pub(crate) fn new(limits: &ResponseLimits) -> Self {
        AnswerBudget {
            max_answer: limits.max_answer_bytes,
            max_calls: limits.max_tool_calls,
            ..AnswerBudget::default()
        }
    }

    /// Counts `n` more bytes of text or arguments; fails past `max_answer_bytes`.
    pub(crate) fn grow(&mut self, n: usize) -> Result<(), ModelError> {
        self.answered = self.answered.saturating_add(n);
        self.hold(n)
    }

    /// Counts `n` bytes held for something that is no answer yet (an empty choice, output
    /// item or content block); fails past `max_answer_bytes`. Not progress.
    pub(crate) fn hold(&mut self, n: usize) -> Result<(), ModelError> {
        self.size = self.size.saturating_add(n);
        super::errors::check_answer_size(self.size, self.max_answer)
    }

    /// Counts a new tool call whose id and name take `named` bytes; fails past
    /// `max_tool_calls` or `max_answer_bytes`. A call costs
    /// [`ResponseLimits::TOOL_CALL_BYTES`] however empty it is: its request and its result
    /// each take a journal entry and a place in every later request of the session.
    pub(crate) fn open_call(&mut self, named: usize) -> Result<(), ModelError> {
        self.calls += 1;
        check_tool_calls(self.calls, self.max_calls)?;
        self.grow(ResponseLimits::TOOL_CALL_BYTES.saturating_add(named))
    }

    /// Counts a new part of the answer held until its end (a choice, an output item, a
    /// content block): a tool call when `call` names its id and name bytes, else room held
    /// as much as an empty call's, which is no progress. Endless empty parts end at the
    /// answer limit like endless text.
    pub(crate) fn open_part(&mut self, call: Option<usize>) -> Result<(), ModelError> {
        match call {
            Some(named) => self.open_call(named),
            None => self.hold(ResponseLimits::TOOL_CALL_BYTES),
        }
    }

    /// `max_answer_bytes`, for the whole answer at its end.
    pub(crate) fn max_answer(&self) -> usize {
        self.max_answer
    }

    /// The answer said it is finished.
    pub(crate) fn finish(&mut self) {
        self.finished = true;
    }

    /// How far the answer got: grows with every byte of text or arguments, every new call
    /// and the finish, and with nothing else (empty deltas, keep-alives, usage, metadata).
    pub(crate) fn progress(&self) -> usize {
        self.answered.saturating_add(usize::from(self.finished))
    }
}

/// Fails when an answer holds `calls` tool calls, more than `limit`.
pub(crate) fn check_tool_calls(calls: usize, limit: usize) -> Result<(), ModelError> {
    if calls > limit {
        return Err(ModelError::new(
            ModelErrorKind::TooLarge,
            format!(
                "the model's answer has more than {limit} tool calls (max_tool_calls, \
                 --max-tool-calls); the call was stopped there"
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(answer: usize, calls: usize) -> ResponseLimits {
        ResponseLimits {
            max_answer_bytes: answer,
            max_tool_calls: calls,
            ..ResponseLimits::default()
        }
    }

    #[test]
    fn empty_calls_count_against_both_limits() {
        let mut budget = AnswerBudget::new(&limits(1_000_000, 3));
        for _ in 0..3 {
            budget.open_call(0).unwrap();
        }
        assert_eq!(budget.progress(), 3 * ResponseLimits::TOOL_CALL_BYTES);
        let e = budget.open_call(0).unwrap_err();
        assert_eq!(e.kind, ModelErrorKind::TooLarge);

        let mut budget = AnswerBudget::new(&limits(ResponseLimits::TOOL_CALL_BYTES * 2, 1000));
        budget.open_call(0).unwrap();
        budget.open_call(0).unwrap();
        assert!(budget.open_call(0).is_err(), "bytes: the third call passes");
    }

    #[test]
    fn progress_moves_only_with_content_calls_and_the_finish() {
        let mut budget = AnswerBudget::new(&limits(100, 10));
        budget.grow(0).unwrap();
        assert_eq!(budget.progress(), 0);
        budget.hold(50).unwrap();
        assert_eq!(budget.progress(), 0, "room held is not progress");
        budget.grow(5).unwrap();
        budget.finish();
        assert_eq!(budget.progress(), 6);
        assert!(budget.hold(50).is_err(), "but it counts against the limit");
    }
}
