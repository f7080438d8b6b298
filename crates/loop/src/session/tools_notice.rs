//! The notice a prompt carries when client tools the model was offered are gone (their
//! client left the session), as the Copilot CLI words it: the model's history still shows
//! calls of them, and without the notice it would try them again.
//!
//! The notice goes at the head of the prompt's text, inside the recorded `transformedContent`,
//! so a resume and a replay send the same text. What the last prompt offered is kept in
//! memory (`Actor::client_tools_told`): a session reopened in another process starts without
//! it, and tells of nothing that changed before.

use super::actor::Actor;

impl Actor {
    /// The notice for the client tools offered at this session's previous prompt and not
    /// now, if any; remembers what is offered now for the next prompt.
    pub(super) fn tools_changed_notice(&self) -> Option<String> {
        let now: Vec<String> = self
            .parts
            .external_tools
            .as_ref()
            .map(|x| x.specs().into_iter().map(|s| s.name).collect())
            .unwrap_or_default();
        let before = super::lock::lock(&self.client_tools_told).replace(now.clone())?;
        notice(&before, &now)
    }
}

/// The notice for the tools in `before` that are not in `now`, in `before`'s order.
fn notice(before: &[String], now: &[String]) -> Option<String> {
    let gone: Vec<&str> = before
        .iter()
        .filter(|name| !now.contains(name))
        .map(String::as_str)
        .collect();
    (!gone.is_empty()).then(|| {
        format!(
            "<tools_changed_notice>\nTools no longer available: {}\n\nImportant: Do not attempt \
             to call tools that are no longer available unless you've been notified that \
             they're available again.\n</tools_changed_notice>",
            gone.join(", ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn a_gone_tool_is_named_in_the_runtimes_words() {
        assert_eq!(
            notice(
                &names(&["stable_tool", "ephemeral_tool"]),
                &names(&["stable_tool"])
            )
            .as_deref(),
            Some(
                "<tools_changed_notice>\nTools no longer available: ephemeral_tool\n\nImportant: \
                 Do not attempt to call tools that are no longer available unless you've been \
                 notified that they're available again.\n</tools_changed_notice>"
            )
        );
    }

    #[test]
    fn nothing_gone_is_no_notice_and_several_are_listed_in_order() {
        assert_eq!(notice(&names(&["a"]), &names(&["a", "b"])), None);
        assert_eq!(notice(&[], &[]), None);
        let both = notice(&names(&["b", "a", "c"]), &names(&["c"])).unwrap();
        assert!(both.contains("Tools no longer available: b, a\n"), "{both}");
    }
}
