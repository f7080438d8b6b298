//! What several of this crate's test files share.

pub mod payloads;
