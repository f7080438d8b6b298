//! The conversation as the model sees it: system prompt, user and assistant messages, tool
//! results, and compaction summaries standing in for older history.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A picture a tool result gave the model: one `image` entry of the result's
/// `binaryResultsForLlm`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolImage {
    /// The bytes, base64.
    pub data: String,
    /// Their media type, e.g. `image/png`.
    pub mime_type: String,
    /// The text the model reads before the picture.
    #[serde(default)]
    pub description: String,
}

impl ToolImage {
    /// The images of a `tool.execution_complete`'s `data`: its result's `binaryResultsForLlm`
    /// entries of type `image` with their data and media type (others, such as references to
    /// assets, are not pictures the model can be sent).
    pub fn of_result(data: &str) -> Vec<ToolImage> {
        // Most results have none: a look for the key spares them a second parse.
        if memchr::memmem::find(data.as_bytes(), b"binaryResultsForLlm").is_none() {
            return Vec::new();
        }
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Data {
            result: Option<Answer>,
        }
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Answer {
            binary_results_for_llm: Option<Vec<Value>>,
        }
        let Ok(Data {
            result:
                Some(Answer {
                    binary_results_for_llm: Some(entries),
                }),
        }) = serde_json::from_str::<Data>(data)
        else {
            return Vec::new();
        };
        entries
            .into_iter()
            .filter(|e| e["type"] == "image")
            .filter_map(|e| serde_json::from_value(e).ok())
            .collect()
    }
}

/// One message of the model's history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "camelCase")]
pub enum Message {
    /// The system prompt (`system.message` with role `system`); always first.
    System {
        /// The prompt text.
        content: String,
    },
    /// A developer instruction (`system.message` with role `developer`), in place.
    Developer {
        /// The instruction text.
        content: String,
    },
    /// A user message: the text sent to the model (`transformedContent` when recorded).
    #[serde(rename_all = "camelCase")]
    User {
        /// What the model receives.
        content: String,
        /// Injected by autopilot rather than typed.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        autopilot_continuation: bool,
        /// What was typed, when the model receives something else (`transformedContent`):
        /// a compaction summary lists the typed text of the messages it replaces.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        typed: Option<String>,
        /// `messageId`, when recorded.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message_id: Option<String>,
        /// The attachments as `user.message` recorded them (rendered into the request).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        attachments: Vec<Value>,
    },
    /// The model's answer: text and the tool calls it made.
    #[serde(rename_all = "camelCase")]
    Assistant {
        /// The answer's text (empty when it only called tools).
        content: String,
        /// The tool calls, in order.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_requests: Vec<ToolCallRequest>,
        /// `messageId`, when recorded.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message_id: Option<String>,
    },
    /// The result of one tool call, placed right after the assistant message that made it.
    #[serde(rename_all = "camelCase")]
    Tool {
        /// The call this answers.
        tool_call_id: String,
        /// The tool's name, when known.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        name: String,
        /// What the model is told: the result's `content`, or the error message.
        content: String,
        /// Whether the tool succeeded.
        success: bool,
        /// Pictures the result gave the model (`result.binaryResultsForLlm`), sent in a user
        /// message after the tool results.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<ToolImage>,
    },
    /// The summary a compaction left in place of the history it removed.
    #[serde(rename_all = "camelCase")]
    Summary {
        /// The summary text the model wrote.
        content: String,
        /// The typed text of the user messages it replaced (earlier summaries' included), in
        /// order: the runtime repeats them to the model beside the summary.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        user_messages: Vec<String>,
    },
}

impl Message {
    /// The text the model receives for a compaction summary, in the Copilot runtime's words
    /// (sent as a user message in place of the history it replaced); `None` for other messages.
    pub fn summary_text(&self) -> Option<String> {
        let Message::Summary {
            content,
            user_messages,
        } = self
        else {
            return None;
        };
        let mut text = String::from(
            "Some of the conversation history has been summarized to free up context.\n\n\
             You were originally given instructions from a user over one or more turns. \
             Here were the user messages:\n",
        );
        for m in user_messages {
            text.push_str("<user_message>\n");
            text.push_str(m);
            text.push_str("\n</user_message>\n");
        }
        text.push_str("\nHere is a summary of the prior context:\n<summary>\n");
        text.push_str(content);
        text.push_str("\n</summary>\n");
        Some(text)
    }
}

/// One tool call in an assistant message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallRequest {
    /// The call's id.
    pub tool_call_id: String,
    /// The tool's name.
    pub name: String,
    /// Arguments as the model sent them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Value>,
}

/// A conversation being changed by the event at view position `at`, with the view position
/// of the event each message came from (`origins`, kept beside the messages), so that a
/// rewind can drop what the removed events added.
/// Messages a `session.truncation` took out of the model's view for the rest of the message
/// it happened in, oldest first, with their origins (see `SessionState::origins`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Hidden {
    /// The messages, in conversation order.
    pub messages: Vec<Message>,
    /// The view position of the event that added each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub origins: Vec<u64>,
}

impl Hidden {
    /// Nothing is hidden.
    pub fn is_empty(&self) -> bool {
        self.messages.is_empty()
    }

    /// Drops what the events from view position `cut` on added (a rewind).
    pub(crate) fn rewind_to(&mut self, cut: u64) {
        let keep: Vec<bool> = self.origins.iter().map(|o| *o < cut).collect();
        if keep.len() != self.messages.len() {
            return;
        }
        let mut decisions = keep.iter();
        self.messages
            .retain(|_| decisions.next().copied().unwrap_or(true));
        self.origins.retain(|o| *o < cut);
    }
}

pub(crate) struct Conversation<'a> {
    messages: &'a mut Vec<Message>,
    origins: &'a mut Vec<u64>,
    at: u64,
}

impl<'a> Conversation<'a> {
    /// The conversation with its origins, changed by the event at view position `at`.
    pub(crate) fn new(messages: &'a mut Vec<Message>, origins: &'a mut Vec<u64>, at: u64) -> Self {
        // A state from before origins were kept: its messages predate every later event.
        if origins.len() != messages.len() {
            let missing = messages.len().saturating_sub(origins.len());
            origins.truncate(messages.len());
            origins.splice(0..0, std::iter::repeat_n(0, missing));
        }
        Conversation {
            messages,
            origins,
            at,
        }
    }

    /// Appends a message.
    pub(crate) fn push(&mut self, message: Message) {
        self.messages.push(message);
        self.origins.push(self.at);
    }

    fn insert(&mut self, index: usize, message: Message) {
        self.messages.insert(index, message);
        self.origins.insert(index, self.at);
    }

    /// Sets the system prompt (replacing an earlier one: the model sees the latest).
    pub(crate) fn set_system(&mut self, content: String) {
        match self.messages.first_mut() {
            Some(Message::System { content: old }) => *old = content,
            _ => self.insert(0, Message::System { content }),
        }
    }

    /// Adds a tool result after the assistant message that requested the call, behind the
    /// results already there, so the history stays valid even when a result arrives late.
    pub(crate) fn add_tool_result(&mut self, message: Message, tool_call_id: &str) {
        let Some(owner) = owner_of(self.messages, tool_call_id) else {
            // No request recorded (user-initiated or runtime tools): the result goes last.
            self.push(message);
            return;
        };
        let mut at = owner + 1;
        while matches!(self.messages.get(at), Some(Message::Tool { .. })) {
            at += 1;
        }
        self.insert(at, message);
    }

    /// Adds the result a resumed runtime makes up for a call the crash cut off, when an
    /// assistant message requested it (a call nobody requested is not in the model's view).
    pub(crate) fn add_interrupted_result(&mut self, tool_call_id: &str, name: &str) {
        if owner_of(self.messages, tool_call_id).is_some() {
            let message = Message::Tool {
                tool_call_id: tool_call_id.to_owned(),
                name: name.to_owned(),
                content: crate::interrupted::INTERRUPTED_MESSAGE.to_owned(),
                success: false,
                images: Vec::new(),
            };
            self.add_tool_result(message, tool_call_id);
        }
    }

    /// Index of the first message a truncation may drop: after the system messages and the
    /// first user message (or summary), which the runtime's truncator always keeps.
    fn truncation_head(&self) -> usize {
        let first = self
            .messages
            .iter()
            .position(|m| !matches!(m, Message::System { .. } | Message::Developer { .. }))
            .unwrap_or(self.messages.len());
        first
            + usize::from(matches!(
                self.messages.get(first),
                Some(Message::User { .. } | Message::Summary { .. })
            ))
    }

    /// Takes the oldest `removed` messages after the kept head out of the view (a
    /// `session.truncation`), with the tool results that would be left without their
    /// request, and moves them to the end of `hidden` (they are newer than what it holds).
    pub(crate) fn truncate_oldest(&mut self, removed: u64, hidden: &mut Hidden) {
        let head = self.truncation_head();
        let available = self.messages.len() - head;
        let mut end = head
            + usize::try_from(removed)
                .unwrap_or(usize::MAX)
                .min(available);
        while matches!(self.messages.get(end), Some(Message::Tool { .. })) {
            end += 1;
        }
        hidden.messages.extend(self.messages.drain(head..end));
        hidden.origins.extend(self.origins.drain(head..end));
    }

    /// Puts what truncations of the last message hid back in the view, where they were: the
    /// runtime truncates each message's requests from the whole history again.
    pub(crate) fn restore(&mut self, hidden: &mut Hidden) {
        if hidden.messages.is_empty() {
            return;
        }
        let head = self.truncation_head();
        let origins = std::mem::take(&mut hidden.origins);
        let messages = std::mem::take(&mut hidden.messages);
        // A state whose counts disagree predates origins: their origin is unknown (0).
        let origins = if origins.len() == messages.len() {
            origins
        } else {
            vec![0; messages.len()]
        };
        self.origins.splice(head..head, origins);
        self.messages.splice(head..head, messages);
    }

    /// Replaces the oldest `removed` messages (all when `None`) by a compaction summary; returns
    /// what it replaced (the user texts moved into the summary), for the caller to drop.
    pub(crate) fn compact(&mut self, summary: String, removed: Option<u64>) -> Vec<Message> {
        let messages = &mut *self.messages;
        let first = usize::from(matches!(messages.first(), Some(Message::System { .. })));
        let available = messages.len() - first;
        let count = removed.map_or(available, |n| {
            usize::try_from(n).unwrap_or(usize::MAX).min(available)
        });
        // A new summary always takes in the one before it (at the front), even when it
        // names no message: two summaries would both claim to be the prior context.
        let earlier_summary = matches!(messages.get(first), Some(Message::Summary { .. }));
        let mut end = first + count.max(usize::from(earlier_summary));
        // Never cut between an assistant message and its tool results.
        while matches!(messages.get(end), Some(Message::Tool { .. })) {
            end += 1;
        }
        let mut gone: Vec<Message> = messages.drain(first..end).collect();
        let mut user_messages = Vec::new();
        for m in &mut gone {
            match m {
                Message::User {
                    content,
                    typed,
                    autopilot_continuation: false,
                    ..
                } => user_messages.push(typed.take().unwrap_or_else(|| std::mem::take(content))),
                Message::Summary {
                    user_messages: earlier,
                    ..
                } => user_messages.append(earlier),
                _ => {}
            }
        }
        messages.insert(
            first,
            Message::Summary {
                content: summary,
                user_messages,
            },
        );
        self.origins.splice(first..end, std::iter::once(self.at));
        gone
    }

    /// Drops every message that an event at view position `cut` or later added (a rewind).
    /// The system prompt stays: the model is always sent one. Returns how many went.
    pub(crate) fn rewind_to(&mut self, cut: u64) -> usize {
        let keep: Vec<bool> = self
            .origins
            .iter()
            .zip(self.messages.iter())
            .map(|(o, m)| *o < cut || matches!(m, Message::System { .. }))
            .collect();
        let before = self.messages.len();
        let mut decisions = keep.iter();
        self.messages
            .retain(|_| decisions.next().copied().unwrap_or(true));
        let mut decisions = keep.iter();
        self.origins
            .retain(|_| decisions.next().copied().unwrap_or(true));
        before - self.messages.len()
    }
}

/// Index of the assistant message that requested `tool_call_id`.
fn owner_of(conversation: &[Message], tool_call_id: &str) -> Option<usize> {
    // Usually the requesting message is the last assistant message: search from the end.
    conversation.iter().rposition(|m| match m {
        Message::Assistant { tool_requests, .. } => {
            tool_requests.iter().any(|r| r.tool_call_id == tool_call_id)
        }
        _ => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(text: &str) -> Message {
        Message::User {
            content: format!("<t>{text}"),
            typed: Some(text.to_owned()),
            autopilot_continuation: false,
            message_id: None,
            attachments: Vec::new(),
        }
    }

    fn call(id: &str) -> Message {
        Message::Assistant {
            content: String::new(),
            tool_requests: vec![ToolCallRequest {
                tool_call_id: id.to_owned(),
                name: "view".to_owned(),
                arguments: None,
            }],
            message_id: None,
        }
    }

    fn result(id: &str) -> Message {
        Message::Tool {
            tool_call_id: id.to_owned(),
            name: "view".to_owned(),
            content: "ok".to_owned(),
            success: true,
            images: Vec::new(),
        }
    }

    fn system() -> Message {
        Message::System {
            content: "sys".to_owned(),
        }
    }

    /// Runs `change` on `c` as the event after all of its messages.
    fn with(c: &mut Vec<Message>, change: impl FnOnce(&mut Conversation<'_>)) {
        let mut origins: Vec<u64> = (0..c.len() as u64).collect();
        let at = c.len() as u64;
        change(&mut Conversation::new(c, &mut origins, at));
    }

    #[test]
    fn a_rewind_drops_what_the_removed_events_added_and_keeps_the_prompt() {
        let mut messages = Vec::new();
        let mut origins = Vec::new();
        Conversation::new(&mut messages, &mut origins, 0).set_system("sys".to_owned());
        Conversation::new(&mut messages, &mut origins, 1).push(user("a"));
        Conversation::new(&mut messages, &mut origins, 2).push(call("1"));
        Conversation::new(&mut messages, &mut origins, 3).push(user("b"));
        // A late result (event 4) lands before `b`: a cut at 4 must drop it all the same.
        Conversation::new(&mut messages, &mut origins, 4).add_tool_result(result("1"), "1");
        assert_eq!(messages[3], result("1"));
        Conversation::new(&mut messages, &mut origins, 5).set_system("new".to_owned());
        let removed = Conversation::new(&mut messages, &mut origins, 6).rewind_to(3);
        assert_eq!(removed, 2);
        assert_eq!(
            messages,
            vec![
                Message::System {
                    content: "new".to_owned()
                },
                user("a"),
                call("1")
            ]
        );
        assert_eq!(origins, vec![0, 1, 2]);
    }

    #[test]
    fn origins_missing_from_an_older_state_count_as_before_every_cut() {
        let mut messages = vec![system(), user("a")];
        let mut origins = Vec::new();
        let mut c = Conversation::new(&mut messages, &mut origins, 7);
        c.push(user("b"));
        assert_eq!(c.rewind_to(1), 1);
        assert_eq!(messages, vec![system(), user("a")]);
    }

    #[test]
    fn truncation_keeps_the_first_prompt_never_leaves_a_result_alone_and_restores() {
        let mut hidden = Hidden::default();
        let full = vec![
            system(),
            user("a"),
            call("1"),
            result("1"),
            call("2"),
            result("2"),
            user("b"),
        ];
        let mut c = full.clone();
        let mut origins: Vec<u64> = (0..c.len() as u64).collect();
        let mut v = Conversation::new(&mut c, &mut origins, 7);
        v.truncate_oldest(1, &mut hidden);
        v.truncate_oldest(2, &mut hidden);
        assert_eq!(c, vec![system(), user("a"), user("b")]);
        assert_eq!(hidden.origins, [2, 3, 4, 5]);
        let mut v = Conversation::new(&mut c, &mut origins, 7);
        v.restore(&mut hidden);
        assert_eq!(c, full);
        assert_eq!(origins, (0..7).collect::<Vec<u64>>());
        assert!(hidden.is_empty());
        let mut c = vec![system(), user("a")];
        with(&mut c, |v| v.truncate_oldest(10, &mut Hidden::default()));
        assert_eq!(c, vec![system(), user("a")]);
    }

    #[test]
    fn a_summary_lists_the_typed_user_messages_it_replaces() {
        let mut c = vec![
            system(),
            user("a"),
            call("1"),
            result("1"),
            user("b"),
            call("2"),
        ];
        with(&mut c, |v| {
            v.compact("first".to_owned(), Some(3));
        });
        with(&mut c, |v| {
            v.compact("second".to_owned(), Some(2));
        });
        assert_eq!(c.len(), 3, "{c:?}");
        let text = c[1].summary_text().expect("a summary");
        assert!(text.ends_with("<user_message>\na\n</user_message>\n<user_message>\nb\n</user_message>\n\nHere is a summary of the prior context:\n<summary>\nsecond\n</summary>\n"), "{text}");
        assert_eq!(c[0].summary_text(), None);
    }

    #[test]
    fn a_new_summary_takes_in_the_one_before_even_when_it_names_none() {
        let mut c = vec![system(), user("a"), call("1"), result("1")];
        with(&mut c, |v| {
            v.compact("first".to_owned(), Some(1));
        });
        with(&mut c, |v| {
            v.compact("second".to_owned(), Some(0));
        });
        assert_eq!(c.len(), 4, "{c:?}");
        let text = c[1].summary_text().expect("a summary");
        assert!(
            text.contains("<user_message>\na\n</user_message>"),
            "{text}"
        );
        assert!(text.ends_with("<summary>\nsecond\n</summary>\n"), "{text}");
        assert_eq!(c[0].summary_text(), None);
        assert!(c[2..].iter().all(|m| m.summary_text().is_none()));
    }

    #[test]
    fn an_interrupted_result_only_answers_a_requested_call() {
        let mut c = vec![system(), user("a"), call("1"), user("b")];
        with(&mut c, |v| v.add_interrupted_result("1", "view"));
        with(&mut c, |v| v.add_interrupted_result("nobody", "view"));
        assert_eq!(c.len(), 5);
        assert!(
            matches!(&c[3], Message::Tool { tool_call_id, success: false, .. } if tool_call_id == "1")
        );
    }
}
