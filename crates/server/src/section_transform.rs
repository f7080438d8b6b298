//! The client's `transform` actions of `systemMessage.customize`: the SDK keeps the callbacks
//! to itself and sends `{action: "transform"}` for each section; the runtime asks for the new
//! texts with the server-to-client request `systemMessage.transform`
//! (`{sessionId, sections: {id: {content}}}` answered by `{sections: {id: {content}}}`).

use std::sync::Arc;

use serde_json::{Map, Value, json};
use turnstile_loop::prompt::{SectionTransformer, TransformError};
use turnstile_tools::BoxFuture;

use crate::peer::Peer;

/// Runs a session's section transforms on the client that declared them.
pub(crate) struct ClientTransformer {
    session_id: String,
    peer: Arc<Peer>,
}

impl ClientTransformer {
    /// A transformer asking the client behind `peer` for `session_id`'s sections.
    pub(crate) fn new(session_id: String, peer: Arc<Peer>) -> Self {
        ClientTransformer { session_id, peer }
    }
}

impl SectionTransformer for ClientTransformer {
    fn transform(
        &self,
        sections: Vec<(String, String)>,
    ) -> BoxFuture<'static, Result<Vec<(String, String)>, TransformError>> {
        let peer = Arc::clone(&self.peer);
        let session_id = self.session_id.clone();
        Box::pin(async move {
            let wire: Map<String, Value> = sections
                .iter()
                .map(|(id, text)| (id.clone(), json!({ "content": text })))
                .collect();
            let params = json!({"sessionId": session_id, "sections": wire});
            let answer = peer
                .call("systemMessage.transform", params)
                .await
                .map_err(|e| TransformError {
                    message: e.to_string(),
                })?;
            parse_answer(&sections, &answer)
        })
    }
}

/// The new texts of the sections asked for, in the order asked; a section the answer leaves
/// out (or answers without a string `content`) keeps its text, as the SDK does for a callback
/// that throws. Sections the answer adds are ignored: the client may only change what it was
/// given.
fn parse_answer(
    asked: &[(String, String)],
    answer: &Value,
) -> Result<Vec<(String, String)>, TransformError> {
    let Some(sections) = answer.get("sections").and_then(Value::as_object) else {
        return Err(TransformError {
            message: "the answer to systemMessage.transform has no `sections` object".into(),
        });
    };
    Ok(asked
        .iter()
        .map(|(id, text)| {
            let new = sections
                .get(id)
                .and_then(|s| s.get("content"))
                .and_then(Value::as_str)
                .unwrap_or(text);
            (id.clone(), new.to_owned())
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asked() -> Vec<(String, String)> {
        vec![
            ("identity".into(), "I am".into()),
            ("safety".into(), "be safe".into()),
        ]
    }

    #[test]
    fn answers_replace_only_the_sections_asked() {
        let answer = json!({"sections": {
            "identity": {"content": "I AM"},
            "invented": {"content": "not asked"},
        }});
        assert_eq!(
            parse_answer(&asked(), &answer).unwrap(),
            vec![
                ("identity".into(), "I AM".into()),
                ("safety".into(), "be safe".into())
            ]
        );
    }

    #[test]
    fn a_malformed_section_keeps_its_text() {
        let answer = json!({"sections": {"identity": {"content": 5}, "safety": "x"}});
        assert_eq!(parse_answer(&asked(), &answer).unwrap(), asked());
    }

    #[test]
    fn an_answer_without_sections_is_an_error() {
        let e = parse_answer(&asked(), &json!({"other": 1})).unwrap_err();
        assert!(e.message.contains("sections"), "{e}");
        assert!(parse_answer(&asked(), &json!(null)).is_err());
    }
}
