//! The person behind an SDK client, asked the model's `ask_user` questions with the
//! server-to-client request `userInput.request` (`{sessionId, question, choices?,
//! allowFreeform}` answered by `{answer, wasFreeform}`), as the Copilot CLI asks a client that
//! created its session with `requestUserInput: true`. The answer is the tool call's result, so
//! the journal holds it (`tool.execution_complete`).

use std::sync::Arc;

use serde_json::{Value, json};
use turnstile_tools::BoxFuture;
use turnstile_tools::ask_user::{UserAnswer, UserInput, UserInputError, UserQuestion};

use crate::peer::{CallError, Peer};

/// Asks a session's questions of the client that opened it.
pub(crate) struct ClientUserInput {
    session_id: String,
    peer: Arc<Peer>,
}

impl ClientUserInput {
    /// Questions of `session_id`, asked of the client behind `peer`.
    pub(crate) fn new(session_id: String, peer: Arc<Peer>) -> Self {
        ClientUserInput { session_id, peer }
    }
}

impl UserInput for ClientUserInput {
    fn ask(
        &self,
        question: UserQuestion,
    ) -> BoxFuture<'static, Result<UserAnswer, UserInputError>> {
        let peer = Arc::clone(&self.peer);
        let params = request_params(&self.session_id, &question);
        Box::pin(async move {
            let answer = peer
                .call("userInput.request", params)
                .await
                .map_err(|e| match e {
                    CallError::Closed => UserInputError::Disconnected,
                    other => UserInputError::Handler(other.to_string()),
                })?;
            parse_answer(&answer)
        })
    }
}

/// The request's params; `choices` only when there are some, as the runtime sends them.
fn request_params(session_id: &str, question: &UserQuestion) -> Value {
    let mut params = json!({
        "sessionId": session_id,
        "question": question.question,
        "allowFreeform": question.allow_freeform,
    });
    if !question.choices.is_empty() {
        params["choices"] = json!(question.choices);
    }
    params
}

/// `{answer, wasFreeform}`; an answer without a string `answer` is the handler's failure.
fn parse_answer(answer: &Value) -> Result<UserAnswer, UserInputError> {
    let Some(text) = answer.get("answer").and_then(Value::as_str) else {
        return Err(UserInputError::Handler(
            "the answer has no string `answer`".into(),
        ));
    };
    Ok(UserAnswer {
        answer: text.to_owned(),
        was_freeform: answer
            .get("wasFreeform")
            .and_then(Value::as_bool)
            .unwrap_or(false),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn choices_are_sent_only_when_there_are_some() {
        let mut question = UserQuestion {
            question: "Pick".into(),
            choices: vec!["Red".into()],
            allow_freeform: false,
        };
        assert_eq!(
            request_params("s", &question),
            json!({"sessionId": "s", "question": "Pick", "allowFreeform": false, "choices": ["Red"]})
        );
        question.choices.clear();
        assert!(request_params("s", &question).get("choices").is_none());
    }

    #[test]
    fn an_answer_must_carry_its_text() {
        assert_eq!(
            parse_answer(&json!({"answer": "Red", "wasFreeform": false})),
            Ok(UserAnswer {
                answer: "Red".into(),
                was_freeform: false
            })
        );
        assert!(matches!(
            parse_answer(&json!({"wasFreeform": true})),
            Err(UserInputError::Handler(_))
        ));
    }
}
