//! `ask_user`: the model asks the person a question (free text, or one of some choices) and
//! waits for the answer. Offered only when someone can answer ([`UserInput`]: an SDK client
//! with a user-input handler), as the runtime offers it. The answer is the call's result, so
//! the journal's `tool.execution_complete` holds what the user said.

use std::sync::Arc;

use serde_json::{Value, json};

use super::{AsyncTool, BoxFuture, ToolContext, ToolFailure, ToolOutput, ToolSpec, args};

/// The tool's name.
pub const ASK_USER: &str = "ask_user";

/// One question, as the SDK's `userInput.request` carries it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserQuestion {
    /// The question.
    pub question: String,
    /// The choices offered, if any.
    pub choices: Vec<String>,
    /// Whether an answer outside the choices is accepted (the runtime's default: yes).
    pub allow_freeform: bool,
}

/// The person's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserAnswer {
    /// What they answered.
    pub answer: String,
    /// Typed by them rather than picked from the choices.
    pub was_freeform: bool,
}

/// Why a question got no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UserInputError {
    /// Whoever answers went away before answering.
    #[error("the user input handler is no longer connected")]
    Disconnected,
    /// The handler answered with an error, or with something that is not an answer.
    #[error("the user input handler failed: {0}")]
    Handler(String),
}

/// Someone who answers the model's questions.
pub trait UserInput: Send + Sync {
    /// Asks `question`; resolves with the answer.
    fn ask(&self, question: UserQuestion)
    -> BoxFuture<'static, Result<UserAnswer, UserInputError>>;
}

/// The `ask_user` tool over the one who answers.
#[derive(Clone)]
pub struct AskUserTool {
    answers: Arc<dyn UserInput>,
}

impl AskUserTool {
    /// The tool, asking `answers`.
    pub fn new(answers: Arc<dyn UserInput>) -> Self {
        AskUserTool { answers }
    }
}

impl std::fmt::Debug for AskUserTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AskUserTool").finish_non_exhaustive()
    }
}

impl AsyncTool for AskUserTool {
    const NAME: &'static str = ASK_USER;
    const TITLE: Option<&'static str> = Some("Asking user");
    type Args = UserQuestion;

    fn offer(&self) -> ToolSpec {
        ToolSpec {
            name: ASK_USER.into(),
            description: "Use the ask_user tool to ask the user clarifying questions when \
                needed. Ask one question at a time; offer choices when the answer is one of a \
                few options (the user may still answer in their own words unless \
                allow_freeform is false). Wait for the answer before going on."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "question": {"type": "string", "description": "The question to ask the user."},
                    "choices": {
                        "type": "array",
                        "items": {"type": "string"},
                        "description": "Optional choices for the user to pick from."
                    },
                    "allow_freeform": {
                        "type": "boolean",
                        "description": "Whether the user may answer in their own words besides the choices (default true)."
                    }
                },
                "required": ["question"]
            }),
            ..ToolSpec::default()
        }
    }

    fn check(&self, args: &Value, _ctx: &ToolContext) -> Result<UserQuestion, ToolFailure> {
        let question = args::required_str(args, "question")?.to_owned();
        let choices = args::string_list(args, "choices")?.unwrap_or_default();
        let allow_freeform = args::optional_bool(args, "allow_freeform")?.unwrap_or(true);
        Ok(UserQuestion {
            question,
            choices,
            allow_freeform,
        })
    }

    async fn act(
        &self,
        question: UserQuestion,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolFailure> {
        let answer = tokio::select! {
            answer = self.answers.ask(question) => answer,
            _ = ctx.cancel.cancelled() => return Err(ToolFailure::cancelled()),
        };
        match answer {
            Ok(answer) => Ok(ToolOutput::text(answer_text(&answer))),
            Err(e) => Err(ToolFailure::new(e.to_string(), "failure")),
        }
    }

    fn summary(&self, args: &Value, _ctx: &ToolContext) -> Option<String> {
        args.get("question")
            .and_then(Value::as_str)
            .map(str::to_owned)
    }
}

/// What the model reads: the runtime's words for a picked choice and for a typed answer.
fn answer_text(answer: &UserAnswer) -> String {
    if answer.was_freeform {
        format!("User responded: {}", answer.answer)
    } else {
        format!("User selected: {}", answer.answer)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::Tool;

    /// Answers with the first choice, or types one answer, and keeps every question.
    #[derive(Default)]
    struct Person {
        asked: Mutex<Vec<UserQuestion>>,
    }

    impl UserInput for Person {
        fn ask(
            &self,
            question: UserQuestion,
        ) -> BoxFuture<'static, Result<UserAnswer, UserInputError>> {
            let answer = match question.choices.first() {
                Some(first) => UserAnswer {
                    answer: first.clone(),
                    was_freeform: false,
                },
                None => UserAnswer {
                    answer: "blue".into(),
                    was_freeform: true,
                },
            };
            self.asked.lock().unwrap().push(question);
            Box::pin(async move { Ok(answer) })
        }
    }

    struct Gone;

    impl UserInput for Gone {
        fn ask(&self, _: UserQuestion) -> BoxFuture<'static, Result<UserAnswer, UserInputError>> {
            Box::pin(async { Err(UserInputError::Disconnected) })
        }
    }

    #[tokio::test]
    async fn a_picked_choice_and_a_typed_answer_read_as_the_runtime_words_them() {
        let person = Arc::new(Person::default());
        let tool = AskUserTool::new(person.clone());
        let ctx = ToolContext::new("/");
        let picked = tool
            .run(
                json!({"question": "Pick", "choices": ["Red", "Blue"], "allow_freeform": false}),
                &ctx,
            )
            .await
            .unwrap();
        assert_eq!(picked.content, "User selected: Red");
        let typed = tool
            .run(json!({"question": "Favourite colour?"}), &ctx)
            .await
            .unwrap();
        assert_eq!(typed.content, "User responded: blue");
        let asked = person.asked.lock().unwrap();
        assert_eq!(
            *asked,
            vec![
                UserQuestion {
                    question: "Pick".into(),
                    choices: vec!["Red".into(), "Blue".into()],
                    allow_freeform: false,
                },
                UserQuestion {
                    question: "Favourite colour?".into(),
                    choices: vec![],
                    allow_freeform: true,
                },
            ]
        );
    }

    #[tokio::test]
    async fn bad_arguments_are_refused_before_anyone_is_asked() {
        let person = Arc::new(Person::default());
        let tool = AskUserTool::new(person.clone());
        let ctx = ToolContext::new("/");
        for args in [
            json!({}),
            json!({"question": "q", "choices": {"a": 1}}),
            json!({"question": "q", "choices": [1]}),
            json!({"question": "q", "allow_freeform": "no"}),
            json!("q"),
        ] {
            let err = tool.run(args.clone(), &ctx).await.unwrap_err();
            assert_eq!(err.code.as_deref(), Some("invalid_arguments"), "{args}");
        }
        assert!(person.asked.lock().unwrap().is_empty());
    }

    #[tokio::test]
    async fn nobody_left_to_answer_is_a_failure_the_model_reads() {
        let tool = AskUserTool::new(Arc::new(Gone));
        let err = tool
            .run(json!({"question": "q"}), &ToolContext::new("/"))
            .await
            .unwrap_err();
        assert_eq!(err.code.as_deref(), Some("failure"));
        assert!(
            err.message.contains("no longer connected"),
            "{}",
            err.message
        );
    }

    #[tokio::test]
    async fn a_cancelled_session_stops_waiting() {
        struct Never;
        impl UserInput for Never {
            fn ask(
                &self,
                _: UserQuestion,
            ) -> BoxFuture<'static, Result<UserAnswer, UserInputError>> {
                Box::pin(std::future::pending())
            }
        }
        let tool = AskUserTool::new(Arc::new(Never));
        let ctx = ToolContext::new("/");
        ctx.cancel.cancel();
        let err = tool.run(json!({"question": "q"}), &ctx).await.unwrap_err();
        assert_eq!(err, ToolFailure::cancelled());
    }
}
