//! Building the final system prompt: the engine's sections, the client's overrides, the
//! client's transforms, rendered in order.

use super::config::{SectionAction, SectionOverride, SystemMessageConfig};
use super::context::PromptContext;
use super::sections::{IDENTITY_GROUP, IDENTITY_MEMBERS, SectionId, default_text};
use turnstile_providers::BoxFuture;

/// A client that rewrites sections itself (the SDK's function-valued section actions, sent as
/// `transform`; a server answers through the client's `systemMessage.transform`).
pub trait SectionTransformer: Send + Sync {
    /// Gets the current text of each section the client transforms, as `(id, text)` pairs in
    /// override order, and returns the new texts; a section missing from the answer is kept.
    fn transform(
        &self,
        sections: Vec<(String, String)>,
    ) -> BoxFuture<'static, Result<Vec<(String, String)>, TransformError>>;
}

/// The client could not transform the sections (the prompt then keeps their texts).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the client did not transform the system prompt sections: {message}")]
pub struct TransformError {
    /// What went wrong.
    pub message: String,
}

/// The engine's prompt for `ctx` with no client changes.
pub fn default_prompt(ctx: &PromptContext) -> String {
    let slots: Vec<Slot> = SectionId::ALL
        .into_iter()
        .map(|id| Slot {
            id,
            text: default_text(id, ctx),
            removed: false,
        })
        .collect();
    render(&slots)
}

/// One section while the prompt is being built.
struct Slot {
    id: SectionId,
    text: String,
    removed: bool,
}

/// The system prompt for `ctx` under `config`; `transformer` serves `transform` actions (without
/// one, or when it fails, the sections keep their text, as the SDK does when a callback throws).
pub async fn build_system_prompt(
    config: &SystemMessageConfig,
    mut ctx: PromptContext,
    transformer: Option<&dyn SectionTransformer>,
) -> String {
    let overrides: &[(String, SectionOverride)] = match config {
        SystemMessageConfig::Replace { content } => return content.clone(),
        SystemMessageConfig::Append { content } => {
            ctx.additional_instructions.extend(non_empty(content));
            &[]
        }
        SystemMessageConfig::Customize { sections, content } => {
            ctx.additional_instructions.extend(non_empty(content));
            // Content for a section this engine does not have still reaches the model.
            for (id, o) in sections {
                let known = id == IDENTITY_GROUP || SectionId::parse(id).is_some();
                if !known && carries_content(o.action) {
                    ctx.additional_instructions.extend(non_empty(&o.content));
                }
            }
            sections
        }
    };
    let mut slots: Vec<Slot> = SectionId::ALL
        .into_iter()
        .map(|id| Slot {
            id,
            text: default_text(id, &ctx),
            removed: false,
        })
        .collect();

    let own = |id: SectionId| overrides.iter().any(|(k, _)| k == id.as_str());
    if let Some((_, group)) = overrides.iter().find(|(k, _)| k == IDENTITY_GROUP) {
        apply_group(&mut slots, group, &own);
    }
    let mut transforms = Vec::new();
    for (key, o) in overrides {
        let Some(id) = SectionId::parse(key) else {
            continue;
        };
        let slot = slot_mut(&mut slots, id);
        if o.action == SectionAction::Transform {
            transforms.push(key.clone());
        } else {
            apply(slot, o);
        }
    }
    if overrides
        .iter()
        .any(|(k, o)| k == IDENTITY_GROUP && o.action == SectionAction::Transform)
    {
        transforms.insert(0, IDENTITY_GROUP.to_owned());
    }
    if !transforms.is_empty() {
        transform(&mut slots, &transforms, transformer).await;
    }
    render(&slots)
}

fn apply_group(slots: &mut [Slot], group: &SectionOverride, own: &dyn Fn(SectionId) -> bool) {
    let members: Vec<SectionId> = IDENTITY_MEMBERS.into_iter().filter(|m| !own(*m)).collect();
    match group.action {
        SectionAction::Remove => {
            for m in members {
                slot_mut(slots, m).removed = true;
            }
        }
        SectionAction::Replace => {
            for (i, m) in members.into_iter().enumerate() {
                let slot = slot_mut(slots, m);
                if i == 0 {
                    slot.text = group.content.clone().unwrap_or_default();
                } else {
                    slot.removed = true;
                }
            }
        }
        SectionAction::Append => {
            if let Some(last) = members.last() {
                apply(slot_mut(slots, *last), group);
            }
        }
        SectionAction::Prepend => {
            if let Some(first) = members.first() {
                apply(slot_mut(slots, *first), group);
            }
        }
        SectionAction::Preserve | SectionAction::Transform => {}
    }
}

fn apply(slot: &mut Slot, o: &SectionOverride) {
    let content = o.content.as_deref().unwrap_or_default();
    match o.action {
        SectionAction::Replace => slot.text = content.to_owned(),
        SectionAction::Remove => slot.removed = true,
        SectionAction::Append if !content.is_empty() => {
            slot.text = join_lines(&slot.text, content);
        }
        SectionAction::Prepend if !content.is_empty() => {
            slot.text = join_lines(content, &slot.text);
        }
        SectionAction::Append
        | SectionAction::Prepend
        | SectionAction::Preserve
        | SectionAction::Transform => {}
    }
}

async fn transform(
    slots: &mut [Slot],
    keys: &[String],
    transformer: Option<&dyn SectionTransformer>,
) {
    let Some(transformer) = transformer else {
        tracing::warn!("system prompt sections ask for a transform but no client can run it");
        return;
    };
    let current: Vec<(String, String)> = keys
        .iter()
        .map(|k| {
            let text = if k == IDENTITY_GROUP {
                identity_text(slots)
            } else {
                SectionId::parse(k).map_or_else(String::new, |id| slot_mut(slots, id).text.clone())
            };
            (k.clone(), text)
        })
        .collect();
    let answer = match transformer.transform(current).await {
        Ok(answer) => answer,
        Err(e) => {
            tracing::warn!(error = %e, "system prompt transform failed; sections kept");
            return;
        }
    };
    for (key, text) in answer {
        if key == IDENTITY_GROUP {
            let mut first = true;
            for m in IDENTITY_MEMBERS {
                let slot = slot_mut(slots, m);
                if slot.removed {
                    continue;
                }
                if first {
                    slot.text = text.clone();
                    first = false;
                } else {
                    slot.removed = true;
                }
            }
        } else if let Some(id) = SectionId::parse(&key).filter(|_| keys.contains(&key)) {
            slot_mut(slots, id).text = text;
        }
    }
}

/// The identity group's text as the prompt shows it.
fn identity_text(slots: &[Slot]) -> String {
    let members: Vec<&Slot> = slots
        .iter()
        .filter(|s| IDENTITY_MEMBERS.contains(&s.id))
        .collect();
    render_slots(members.into_iter())
}

fn render(slots: &[Slot]) -> String {
    render_slots(slots.iter())
}

fn render_slots<'a>(slots: impl Iterator<Item = &'a Slot>) -> String {
    slots
        .filter(|s| !s.removed && !s.text.trim().is_empty())
        .map(|s| match s.id.wrapper() {
            Some(tag) => format!("<{tag}>\n{}\n</{tag}>", s.text),
            None => s.text.clone(),
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}

fn slot_mut(slots: &mut [Slot], id: SectionId) -> &mut Slot {
    // Every id has a slot: the list is built from `SectionId::ALL`.
    let index = slots.iter().position(|s| s.id == id).unwrap_or(0);
    &mut slots[index]
}

fn carries_content(action: SectionAction) -> bool {
    matches!(
        action,
        SectionAction::Replace | SectionAction::Append | SectionAction::Prepend
    )
}

fn non_empty(content: &Option<String>) -> Option<String> {
    content.clone().filter(|c| !c.trim().is_empty())
}

fn join_lines(a: &str, b: &str) -> String {
    if a.is_empty() {
        b.to_owned()
    } else {
        format!("{a}\n{b}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::sync::Mutex;

    fn ctx() -> PromptContext {
        PromptContext {
            cwd: "/work/project".into(),
            os: "Linux".into(),
            model: "m1".into(),
            engine_version: "9.9.9".into(),
            tools: vec!["bash".into(), "view".into()],
            ..Default::default()
        }
    }

    fn config(v: serde_json::Value) -> SystemMessageConfig {
        serde_json::from_value(v).unwrap()
    }

    fn build(v: serde_json::Value) -> String {
        block_on(build_system_prompt(&config(v), ctx(), None))
    }

    fn block_on<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(f)
    }

    /// Every section replaced by a marker shows the order and the wrappers.
    #[test]
    fn sections_come_in_the_sdk_order_inside_their_wrappers() {
        let sections: serde_json::Map<String, serde_json::Value> = SectionId::ALL
            .iter()
            .map(|s| {
                (
                    s.as_str().to_owned(),
                    json!({"action": "replace", "content": format!("[{}]", s.as_str())}),
                )
            })
            .collect();
        let prompt = build(json!({"mode": "customize", "sections": sections}));
        assert_eq!(
            prompt,
            "[preamble]\n\n[tone]\n\n[tool_efficiency]\n\n\
             <code_change_instructions>\n[code_change_rules]\n</code_change_instructions>\n\n\
             [guidelines]\n\n<environment_limitations>\n[safety]\n</environment_limitations>\n\n\
             <environment_context>\n[environment_context]\n</environment_context>\n\n\
             <tools>\n[tool_instructions]\n</tools>\n\n[custom_instructions]\n\n\
             [runtime_instructions]\n\n[last_instructions]"
        );
    }

    #[test]
    fn the_default_prompt_says_what_it_is_compatible_with_and_where_it_runs() {
        let prompt = build(json!({}));
        let first = prompt.lines().next().unwrap();
        assert!(first.contains("turnstile 9.9.9"), "{first}");
        assert!(
            first.contains("compatible with the GitHub Copilot CLI"),
            "{first}"
        );
        assert!(prompt.contains("* Working directory: /work/project\n"));
        assert!(prompt.contains("* Operating system: Linux\n"));
        assert!(prompt.contains("* Tools offered: bash, view"));
        assert!(prompt.contains("* view: "));
        assert!(!prompt.contains("* edit: "), "notes only for offered tools");
    }

    #[test]
    fn append_and_customize_content_join_the_runtime_instructions() {
        let appended = build(json!({"content": "EXTRA"}));
        let before_last = appended.find("EXTRA").unwrap();
        assert!(before_last > appended.find("</tools>").unwrap());
        assert!(before_last < appended.find("Finish the task").unwrap());
        let custom = build(json!({"mode": "customize", "content": "EXTRA"}));
        assert_eq!(custom, appended);
        // Replacing the runtime instructions replaces the additional content with them.
        let replaced = build(json!({"mode": "customize", "content": "EXTRA",
            "sections": {"runtime_instructions": {"action": "replace", "content": "R"}}}));
        assert!(!replaced.contains("EXTRA") && replaced.contains("\n\nR\n\n"));
    }

    #[test]
    fn replace_mode_is_exactly_the_content() {
        assert_eq!(build(json!({"mode": "replace", "content": "only"})), "only");
    }

    #[test]
    fn remove_append_prepend_and_unknown_ids() {
        let prompt = build(json!({"mode": "customize", "sections": {
            "safety": {"action": "remove"},
            "tone": {"action": "prepend", "content": "PRE"},
            "preamble": {"action": "append", "content": "APP"},
            "no_such_section": {"action": "replace", "content": "UNKNOWN"},
            "another_unknown": {"action": "remove"},
        }}));
        assert!(!prompt.contains("environment_limitations"));
        assert!(prompt.contains("GitHub Copilot CLI"));
        assert!(
            prompt.contains("terminal.\nAPP\n\nPRE\n# How to answer"),
            "{prompt}"
        );
        let unknown = prompt.find("UNKNOWN").unwrap();
        assert!(unknown > prompt.find("</tools>").unwrap());
    }

    #[test]
    fn removing_the_identity_group_keeps_preserved_members() {
        let prompt = build(json!({"mode": "customize", "sections": {
            "identity": {"action": "remove"},
            "tone": {"action": "preserve"},
        }}));
        assert!(prompt.starts_with("# How to answer"), "{prompt}");
        assert!(!prompt.contains("# Using tools"));
        assert!(!prompt.contains("GitHub Copilot CLI"));
        let replaced = build(json!({"mode": "customize", "sections": {
            "identity": {"action": "replace", "content": "I am someone else."},
        }}));
        assert!(
            replaced.starts_with("I am someone else.\n\n<code_change_instructions>"),
            "{replaced}"
        );
    }

    struct Recorder(Mutex<Vec<(String, String)>>);

    impl SectionTransformer for Recorder {
        fn transform(
            &self,
            sections: Vec<(String, String)>,
        ) -> BoxFuture<'static, Result<Vec<(String, String)>, TransformError>> {
            *self.0.lock().unwrap() = sections.clone();
            Box::pin(async move {
                Ok(sections
                    .into_iter()
                    .map(|(k, v)| (k, format!("{v}\n[seen {} bytes]", v.len())))
                    .collect())
            })
        }
    }

    struct Failing;

    impl SectionTransformer for Failing {
        fn transform(
            &self,
            _: Vec<(String, String)>,
        ) -> BoxFuture<'static, Result<Vec<(String, String)>, TransformError>> {
            Box::pin(async {
                Err(TransformError {
                    message: "client gone".into(),
                })
            })
        }
    }

    #[test]
    fn transforms_go_to_the_client_with_the_current_text() {
        let cfg = config(json!({"mode": "customize", "sections": {
            "environment_context": {"action": "transform"},
            "tone": {"action": "transform"},
        }}));
        let recorder = Recorder(Mutex::new(Vec::new()));
        let prompt = block_on(build_system_prompt(&cfg, ctx(), Some(&recorder)));
        let seen = recorder.0.lock().unwrap().clone();
        assert_eq!(seen.len(), 2);
        assert_eq!(seen[0].0, "environment_context");
        assert!(seen[0].1.contains("* Working directory: /work/project"));
        assert_eq!(seen[1].0, "tone");
        assert!(prompt.contains(&format!(
            "[seen {} bytes]\n</environment_context>",
            seen[0].1.len()
        )));

        // A failing client leaves the sections as they were.
        let kept = block_on(build_system_prompt(&cfg, ctx(), Some(&Failing)));
        assert_eq!(kept, build(json!({})));
    }
}
