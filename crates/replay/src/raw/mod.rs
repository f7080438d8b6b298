//! Reading journal lines without a full parse: the pieces the fold and the audit both stand on.
//!
//! `json.rs` validates one JSON object at SIMD speed and reports its top-level members,
//! `utf8.rs` checks UTF-8, `envelope.rs` reads a line's standard layout at fixed places,
//! `types.rs` tells its type name apart, and `fields.rs` decodes the few `data` fields the
//! counts and the open work read. None of them knows of a fold or an audit, so both use them
//! and neither depends on the other.

pub(crate) mod envelope;
pub(crate) mod fields;
pub(crate) mod json;
pub(crate) mod types;
pub(crate) mod utf8;
