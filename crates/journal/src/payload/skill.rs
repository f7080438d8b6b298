//! Skills: what a session loaded (`session.skills_loaded`) and a skill the model invoked
//! (`skill.invoked`).

use serde::{Deserialize, Serialize};

use super::payload;

/// How the `source` of a `user.message` holding a loaded skill's context begins; the skill's
/// name follows (`skill-pdf`). Such a message joins the running turn: it starts nothing.
pub const SKILL_SOURCE_PREFIX: &str = "skill-";

/// One skill of `session.skills_loaded`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SkillSummary {
    /// The skill's name (front matter `name`).
    pub name: String,
    /// The slash command that invokes it, without the `/` (the runtime: the name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command_name: Option<String>,
    /// What the skill does (front matter `description`).
    pub description: String,
    /// Where it was found, e.g. `custom` for a configured skill directory.
    pub source: String,
    /// Whether a user may invoke it as a slash command.
    pub user_invocable: bool,
    /// Whether the model may load it (not named in `disabledSkills`).
    pub enabled: bool,
    /// The absolute path of its `SKILL.md`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Front matter `argument-hint`, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub argument_hint: Option<String>,
}

/// `session.skills_loaded` (ephemeral): the skills the session found at its start.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionSkillsLoaded {
    /// The skills, in the order they are offered.
    pub skills: Vec<SkillSummary>,
}
payload!(SessionSkillsLoaded, "session.skills_loaded");

/// `skill.invoked` (persisted): the model loaded a skill with the `skill` tool; the skill's
/// context follows as a `user.message` with `source: "skill-<name>"`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SkillInvoked {
    /// The skill's name.
    pub name: String,
    /// The path of its `SKILL.md`.
    pub path: String,
    /// The skill's body (the file after its front matter).
    pub content: String,
    /// Where it was found, e.g. `custom`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Its description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// What invoked it: `agent-invoked` for the model's `skill` call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger: Option<String>,
    /// The model that invoked it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Tools approved without asking while the skill is active (front matter `allowed-tools`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_tools: Option<Vec<String>>,
    /// Whether the model may not invoke the skill itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disable_model_invocation: Option<bool>,
    /// The plugin the skill came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plugin_name: Option<String>,
    /// That plugin's version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plugin_version: Option<String>,
}
payload!(SkillInvoked, "skill.invoked");
