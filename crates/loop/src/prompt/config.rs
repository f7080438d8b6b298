//! What a client may ask of the system prompt: the SDK's `systemMessage` option, typed.
//!
//! The shapes are the SDK's wire shapes (`{mode: "append"|"replace"|"customize", content?,
//! sections?: {<id>: {action, content?}}}`), so a server can deserialize the client's option
//! straight into [`SystemMessageConfig`].

use serde::{Deserialize, Serialize};

/// How the system prompt is built; the default keeps the engine's sections unchanged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "Wire", into = "Wire")]
pub enum SystemMessageConfig {
    /// The engine's sections, then `content` among the runtime instructions.
    Append {
        /// Extra instructions; none when absent.
        content: Option<String>,
    },
    /// The client's text is the whole prompt.
    Replace {
        /// The complete prompt.
        content: String,
    },
    /// Section-level overrides of the engine's sections.
    Customize {
        /// Overrides by section id, applied in the order given. Unknown ids are kept: a
        /// content-bearing override of one joins the additional instructions, a removal of one
        /// does nothing (the SDK documents both).
        sections: Vec<(String, SectionOverride)>,
        /// Extra instructions, as in append mode.
        content: Option<String>,
    },
}

/// The option as it travels: `mode` may be absent (append).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Wire {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    mode: Option<Mode>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    content: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty", with = "ordered_map")]
    sections: Vec<(String, SectionOverride)>,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Mode {
    Append,
    Replace,
    Customize,
}

/// Why a `systemMessage` option cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SystemMessageError {
    /// `replace` without the prompt to use.
    #[error("systemMessage.content is required when systemMessage.mode is \"replace\"")]
    ReplaceWithoutContent,
}

impl TryFrom<Wire> for SystemMessageConfig {
    type Error = SystemMessageError;

    fn try_from(w: Wire) -> Result<Self, Self::Error> {
        Ok(match w.mode.unwrap_or(Mode::Append) {
            Mode::Append => SystemMessageConfig::Append { content: w.content },
            Mode::Replace => SystemMessageConfig::Replace {
                content: w.content.ok_or(SystemMessageError::ReplaceWithoutContent)?,
            },
            Mode::Customize => SystemMessageConfig::Customize {
                sections: w.sections,
                content: w.content,
            },
        })
    }
}

impl From<SystemMessageConfig> for Wire {
    fn from(c: SystemMessageConfig) -> Self {
        match c {
            SystemMessageConfig::Append { content } => Wire {
                mode: Some(Mode::Append),
                content,
                sections: Vec::new(),
            },
            SystemMessageConfig::Replace { content } => Wire {
                mode: Some(Mode::Replace),
                content: Some(content),
                sections: Vec::new(),
            },
            SystemMessageConfig::Customize { sections, content } => Wire {
                mode: Some(Mode::Customize),
                content,
                sections,
            },
        }
    }
}

impl Default for SystemMessageConfig {
    fn default() -> Self {
        SystemMessageConfig::Append { content: None }
    }
}

/// One section's override.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SectionOverride {
    /// What to do with the section.
    pub action: SectionAction,
    /// Text for `replace`, `append` and `prepend`; ignored otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
}

/// The operation of a [`SectionOverride`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SectionAction {
    /// The section's text becomes `content` (empty when absent).
    Replace,
    /// The section is left out, wrapper and all.
    Remove,
    /// `content` follows the section's text on a new line.
    Append,
    /// `content` precedes the section's text on its own line.
    Prepend,
    /// Keeps a section that a group-level `remove` would drop.
    Preserve,
    /// The client rewrites the section's text (through a [`super::SectionTransformer`]).
    Transform,
}

/// Serde for a JSON object whose key order matters, held as a list of pairs.
mod ordered_map {
    use serde::de::{MapAccess, Visitor};
    use serde::ser::SerializeMap;
    use serde::{Deserializer, Serializer};

    use super::SectionOverride;

    pub(super) fn serialize<S: Serializer>(
        pairs: &[(String, SectionOverride)],
        s: S,
    ) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(pairs.len()))?;
        for (k, v) in pairs {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Vec<(String, SectionOverride)>, D::Error> {
        struct Pairs;
        impl<'de> Visitor<'de> for Pairs {
            type Value = Vec<(String, SectionOverride)>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object of section overrides")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = map.next_entry::<String, Option<SectionOverride>>()? {
                    // The SDK skips `undefined` entries; a JSON `null` is the same intent.
                    if let Some(v) = v {
                        out.push((k, v));
                    }
                }
                Ok(out)
            }
        }
        d.deserialize_map(Pairs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_the_sdk_wire_shapes() {
        for wire in [
            json!({"content": "x"}),
            json!({"mode": "append", "content": "x"}),
        ] {
            let append: SystemMessageConfig = serde_json::from_value(wire).unwrap();
            assert_eq!(
                append,
                SystemMessageConfig::Append {
                    content: Some("x".into())
                }
            );
        }
        let replace: SystemMessageConfig =
            serde_json::from_value(json!({"mode": "replace", "content": "only"})).unwrap();
        assert_eq!(
            serde_json::to_value(&replace).unwrap(),
            json!({"mode": "replace", "content": "only"})
        );
        let err =
            serde_json::from_value::<SystemMessageConfig>(json!({"mode": "replace"})).unwrap_err();
        assert!(err.to_string().contains("required"), "{err}");
        let custom: SystemMessageConfig = serde_json::from_value(json!({
            "mode": "customize",
            "sections": {"tone": {"action": "replace", "content": "T"}, "safety": {"action": "remove"}, "x": null},
            "content": "end"
        }))
        .unwrap();
        let SystemMessageConfig::Customize { sections, content } = custom else {
            panic!("customize expected")
        };
        assert_eq!(sections.len(), 2);
        assert_eq!(sections[0].0, "tone");
        assert_eq!(sections[1].1.action, SectionAction::Remove);
        assert_eq!(content.as_deref(), Some("end"));
    }

    #[test]
    fn an_unknown_action_names_the_field() {
        let err = serde_json::from_value::<SystemMessageConfig>(
            json!({"mode": "customize", "sections": {"tone": {"action": "shout"}}}),
        )
        .unwrap_err();
        assert!(err.to_string().contains("shout"), "{err}");
    }
}
