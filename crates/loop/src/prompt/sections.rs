//! The engine's system prompt as named sections, with the SDK's section ids, in prompt order.
//!
//! The texts are the engine's own. Each section may sit inside a structural tag (kept when the
//! section's text is replaced, dropped with the section when it is removed), as the Copilot CLI
//! lays out its prompt, so a client's override lands where it would there.

use std::fmt::Write as _;

use super::context::PromptContext;

/// A section of the system prompt a client can address (the SDK's `SystemMessageSection`,
/// except the `identity` group, see [`IDENTITY_GROUP`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SectionId {
    /// Who the agent is and what it is compatible with.
    Preamble,
    /// How answers read.
    Tone,
    /// How to use tools economically.
    ToolEfficiency,
    /// Rules for changing code.
    CodeChangeRules,
    /// Working habits.
    Guidelines,
    /// What the agent must not do.
    Safety,
    /// The working directory, OS, git root and tools.
    EnvironmentContext,
    /// Notes per tool.
    ToolInstructions,
    /// Instructions found in the repository (`.github/copilot-instructions.md`, `AGENTS.md`).
    CustomInstructions,
    /// Context the engine adds (and the client's additional instructions).
    RuntimeInstructions,
    /// Closing reminders.
    LastInstructions,
}

/// The group id that addresses [`SectionId::Preamble`], [`SectionId::Tone`] and
/// [`SectionId::ToolEfficiency`] together.
pub const IDENTITY_GROUP: &str = "identity";

/// Members of the `identity` group, in prompt order.
pub const IDENTITY_MEMBERS: [SectionId; 3] = [
    SectionId::Preamble,
    SectionId::Tone,
    SectionId::ToolEfficiency,
];

impl SectionId {
    /// Every section, in prompt order.
    pub const ALL: [SectionId; 11] = [
        SectionId::Preamble,
        SectionId::Tone,
        SectionId::ToolEfficiency,
        SectionId::CodeChangeRules,
        SectionId::Guidelines,
        SectionId::Safety,
        SectionId::EnvironmentContext,
        SectionId::ToolInstructions,
        SectionId::CustomInstructions,
        SectionId::RuntimeInstructions,
        SectionId::LastInstructions,
    ];

    /// The SDK's id of the section.
    pub fn as_str(self) -> &'static str {
        match self {
            SectionId::Preamble => "preamble",
            SectionId::Tone => "tone",
            SectionId::ToolEfficiency => "tool_efficiency",
            SectionId::CodeChangeRules => "code_change_rules",
            SectionId::Guidelines => "guidelines",
            SectionId::Safety => "safety",
            SectionId::EnvironmentContext => "environment_context",
            SectionId::ToolInstructions => "tool_instructions",
            SectionId::CustomInstructions => "custom_instructions",
            SectionId::RuntimeInstructions => "runtime_instructions",
            SectionId::LastInstructions => "last_instructions",
        }
    }

    /// The section of an SDK id; `None` for unknown ids and for the `identity` group.
    pub fn parse(id: &str) -> Option<SectionId> {
        SectionId::ALL.into_iter().find(|s| s.as_str() == id)
    }

    /// The structural tag around the section's text, if any (the tag names the Copilot CLI
    /// uses, so text a client appends finds the same landmarks).
    pub fn wrapper(self) -> Option<&'static str> {
        match self {
            SectionId::CodeChangeRules => Some("code_change_instructions"),
            SectionId::Safety => Some("environment_limitations"),
            SectionId::EnvironmentContext => Some("environment_context"),
            SectionId::ToolInstructions => Some("tools"),
            _ => None,
        }
    }
}

/// One section: its id and its current text (without the wrapper).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    /// Which section.
    pub id: SectionId,
    /// Its text.
    pub text: String,
}

/// The engine's sections for a context, in prompt order; empty sections are left out.
pub fn default_sections(ctx: &PromptContext) -> Vec<Section> {
    SectionId::ALL
        .into_iter()
        .map(|id| Section {
            id,
            text: default_text(id, ctx),
        })
        .filter(|s| !s.text.is_empty())
        .collect()
}

/// The engine's text of one section.
pub fn default_text(id: SectionId, ctx: &PromptContext) -> String {
    match id {
        SectionId::Preamble => format!(
            "You are turnstile {version}, an agent runtime compatible with the GitHub Copilot CLI. \
             You help the user with software engineering work in their project: you read and \
             change files and run commands through the tools you are given, and you answer in \
             the terminal.",
            version = ctx.engine_version
        ),
        SectionId::Tone => "# How to answer\n\
             * Be brief: a few sentences for routine answers; for larger work, say in a line or two \
             what you are about to do, then do it.\n\
             * Report what you did and what you found, not what you intend to do next time.\n\
             * Use Markdown only where it helps (code blocks, short lists)."
            .to_owned(),
        SectionId::ToolEfficiency => "# Using tools\n\
             * When several tool calls do not depend on each other, make them in one response.\n\
             * Look only at what you need: search before reading whole files, read ranges of \
             large files.\n\
             * Stay inside the working directory unless the task needs more."
            .to_owned(),
        SectionId::CodeChangeRules => "* Change only what the task needs, but finish it: a \
             complete change beats a minimal one.\n\
             * Keep the project's style, and update documentation that the change makes wrong.\n\
             * Build and test with the project's own commands, the narrowest ones that cover the \
             change; do not add new tooling unless the task asks for it."
            .to_owned(),
        SectionId::Guidelines => "# Working habits\n\
             * Read the code around a change before making it.\n\
             * When a command fails, read its output and fix the cause rather than retrying \
             blindly.\n\
             * Check that a change works before you say it does."
            .to_owned(),
        SectionId::Safety => "* Do not reveal secrets, tokens or credentials you come across, and \
             do not send project data to outside services.\n\
             * Do not run commands that destroy work the user did not ask to change (forced \
             pushes, deleting branches or directories outside the task).\n\
             * Refuse to write malware or anything meant to harm people or systems."
            .to_owned(),
        SectionId::EnvironmentContext => environment(ctx),
        SectionId::ToolInstructions => tool_notes(ctx),
        SectionId::CustomInstructions => {
            let mut parts: Vec<String> = ctx
                .custom_instructions
                .iter()
                .map(|i| format!("<custom_instruction>\n{}\n</custom_instruction>", i.text))
                .collect();
            // The extra directories' files follow the repository's, in the CLI's words.
            let extra = super::instruction_dirs::render(&ctx.instruction_files);
            if !extra.is_empty() {
                parts.push(extra);
            }
            parts.join("\n\n")
        }
        SectionId::RuntimeInstructions => ctx.additional_instructions.join("\n\n"),
        SectionId::LastInstructions => "Finish the task completely before you stop: if an \
             approach fails, try another. When you are done, answer without calling tools."
            .to_owned(),
    }
}

fn environment(ctx: &PromptContext) -> String {
    let mut out = String::from(
        "The session runs in this environment; there is no need to call tools to confirm it.\n",
    );
    let _ = writeln!(out, "* Working directory: {}", ctx.cwd.display());
    let _ = writeln!(
        out,
        "* Git repository root: {}",
        ctx.git_root.as_ref().map_or_else(
            || "none (not a git repository)".to_owned(),
            |p| p.display().to_string()
        )
    );
    let _ = writeln!(out, "* Operating system: {}", ctx.os);
    if !ctx.model.is_empty() {
        let _ = writeln!(out, "* Model: {}", ctx.model);
    }
    let _ = write!(
        out,
        "* Tools offered: {}",
        if ctx.tools.is_empty() {
            "none".to_owned()
        } else {
            ctx.tools.join(", ")
        }
    );
    out
}

/// Notes for the built-in tools on offer (a tool that is not offered gets none).
fn tool_notes(ctx: &PromptContext) -> String {
    let notes: &[(&str, &str)] = &[
        (
            "bash",
            "bash: runs a command in the working directory and returns its output and exit \
             code. Prefer one command that does the whole job over many small ones.",
        ),
        (
            "view",
            "view: shows a file with line numbers (or a directory listing); pass a range for \
             large files.",
        ),
        (
            "create",
            "create: writes a new file; it refuses to overwrite an existing one.",
        ),
        (
            "edit",
            "edit: replaces one exact occurrence of a string in a file; include enough \
             surrounding text to make it unique.",
        ),
        ("glob", "glob: finds files by name pattern, e.g. `**/*.rs`."),
        (
            "grep",
            "grep: searches file contents with a regular expression; narrow it with a glob.",
        ),
        (
            "task_complete",
            "task_complete: call it once the whole task is done, with a short summary.",
        ),
    ];
    notes
        .iter()
        .filter(|(name, _)| ctx.tools.iter().any(|t| t == name))
        .map(|(_, note)| format!("* {note}"))
        .chain(skill_note(ctx))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The skills `skill` loads, in the `<available_skills>` block the tool's description names
/// (the runtime lists them the same way); none when the tool is not offered.
fn skill_note(ctx: &PromptContext) -> Option<String> {
    if ctx.skills.is_empty() || !ctx.tools.iter().any(|t| t == "skill") {
        return None;
    }
    let mut out = String::from(
        "* skill: loads one of these skills when it fits the task, before anything else:\n<available_skills>",
    );
    for (name, description) in &ctx.skills {
        out.push_str(&format!(
            "\n<skill>\n  <name>{name}</name>\n  <description>{description}</description>\n  <location>custom</location>\n</skill>"
        ));
    }
    out.push_str("\n</available_skills>");
    Some(out)
}
