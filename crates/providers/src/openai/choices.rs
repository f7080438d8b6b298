//! Several `choices` of one answer make one message: every choice's text and tool calls, in
//! choice index order (some servers return consecutive assistant messages that way; the
//! Copilot CLI joins their texts with no separator).

use super::super::ToolCall;

/// What one choice said.
#[derive(Debug, Default)]
pub(super) struct ChoiceAnswer {
    /// The choice's `index` (its position when the server sent none).
    pub index: u64,
    pub content: String,
    pub tool_calls: Vec<ToolCall>,
    pub finish_reason: Option<String>,
}

/// The one message: texts joined, tool calls in order, and the finish reason (`tool_calls`
/// when a choice stopped for its tool calls, else that of the last choice that gave one).
pub(super) fn merge(mut choices: Vec<ChoiceAnswer>) -> (String, Vec<ToolCall>, Option<String>) {
    choices.sort_by_key(|c| c.index);
    let mut content = String::new();
    let mut tool_calls = Vec::new();
    let mut finish_reason: Option<String> = None;
    let mut stopped_for_tools = false;
    for choice in choices {
        content.push_str(&choice.content);
        tool_calls.extend(choice.tool_calls);
        if let Some(reason) = choice.finish_reason {
            stopped_for_tools |= reason == "tool_calls";
            finish_reason = Some(reason);
        }
    }
    if stopped_for_tools {
        finish_reason = Some("tool_calls".into());
    }
    (content, tool_calls, finish_reason)
}

/// The id of a call the server sent without one: `call_<n>` in the first choice (as before
/// there were several), `call_<choice>_<n>` in the others so that ids stay distinct.
pub(super) fn fallback_id(choice: u64, call: u64) -> String {
    if choice == 0 {
        format!("call_{call}")
    } else {
        format!("call_{choice}_{call}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(id: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "t".into(),
            arguments: "{}".into(),
        }
    }

    #[test]
    fn choices_merge_in_index_order() {
        let (content, calls, reason) = merge(vec![
            ChoiceAnswer {
                index: 1,
                content: "Second.".into(),
                tool_calls: vec![call("b")],
                finish_reason: Some("tool_calls".into()),
            },
            ChoiceAnswer {
                index: 0,
                content: "First.".into(),
                tool_calls: vec![call("a")],
                finish_reason: Some("stop".into()),
            },
        ]);
        assert_eq!(content, "First.Second.");
        assert_eq!(
            calls.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(),
            ["a", "b"]
        );
        assert_eq!(reason.as_deref(), Some("tool_calls"));
        assert_eq!(merge(vec![]), (String::new(), vec![], None));
        assert_eq!(
            (fallback_id(0, 2), fallback_id(3, 0)),
            ("call_2".into(), "call_3_0".into())
        );
    }
}
