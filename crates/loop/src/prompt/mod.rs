//! What the model sees besides the conversation itself: the system prompt (named sections a
//! client can replace, remove, extend or transform), the attachments of a user message, how
//! its text is wrapped (time of sending, reminders), and how full a request leaves the context
//! window.
//!
//! (The unit test `tests::a_replaced_section_is_in_the_prompt` runs these lines.)
//!
//! ```ignore
//! use turnstile_loop::prompt::{PromptContext, SystemMessageConfig, build_system_prompt};
//!
//! let config: SystemMessageConfig = serde_json::from_value(serde_json::json!({
//!     "mode": "customize",
//!     "sections": {"tone": {"action": "replace", "content": "Answer in haiku."}}
//! })).unwrap();
//! let ctx = PromptContext::discover(std::path::Path::new("."), "gpt-4.1", vec!["bash".into()]);
//! let prompt = futures_lite(build_system_prompt(&config, ctx, None));
//! assert!(prompt.contains("Answer in haiku."));
//! # fn futures_lite<F: std::future::Future>(f: F) -> F::Output {
//! #     tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(f)
//! # }
//! ```

pub mod attachments;
mod build;
mod config;
mod context;
mod instruction_dirs;
mod instruction_file;
mod sections;
pub mod tokenizer;
pub mod tokens;
mod wrap;

pub use attachments::{Attachment, ContentPart};
pub use build::{SectionTransformer, TransformError, build_system_prompt, default_prompt};
pub use config::{SectionAction, SectionOverride, SystemMessageConfig, SystemMessageError};
pub use context::{
    CustomInstructions, INSTRUCTION_FILES, MAX_INSTRUCTIONS_BYTES, PromptContext, os_name,
};
pub use instruction_dirs::{
    InstructionFile, MAX_DEPTH as MAX_INSTRUCTION_DEPTH,
    MAX_FILES_PER_DIRECTORY as MAX_INSTRUCTION_FILES_PER_DIRECTORY, read_instruction_dirs,
};
pub use sections::{IDENTITY_GROUP, Section, SectionId, default_sections, default_text};
pub use wrap::{SQL_TABLES, SQL_TOOL, wrap_prompt};

#[cfg(test)]
mod tests {
    use super::{PromptContext, SystemMessageConfig, build_system_prompt};

    #[test]
    fn a_replaced_section_is_in_the_prompt() {
        let config: SystemMessageConfig = serde_json::from_value(serde_json::json!({
            "mode": "customize",
            "sections": {"tone": {"action": "replace", "content": "Answer in haiku."}}
        }))
        .unwrap();
        let ctx =
            PromptContext::discover(std::path::Path::new("."), "gpt-4.1", vec!["bash".into()]);
        let prompt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(build_system_prompt(&config, ctx, None));
        assert!(prompt.contains("Answer in haiku."));
    }
}
