//! Typed `data` of the events the engine emits, field for field as in `session-events.schema.json`.
//!
//! Field order follows what the Copilot runtime writes, so a typed payload re-serializes to the
//! runtime's bytes; optional fields are `Option` and omitted when `None`.
//!
//! Conventions shared by every payload:
//! - String enums of the schema are plain `String`s (allowed values in the doc comment), so a
//!   journal from a newer runtime with a new value still parses.
//! - Schema `number` fields are [`serde_json::Number`]: the runtime writes `0` and `0.0` in
//!   different places, and an `f64` would turn every `0` into `0.0`.
//! - An optional field whose schema is `T|null` is `Option<Option<T>>` (absent / `null` / value).
//! - Opaque JSON fields (`arguments`, `input`, ...) are `Option<Value>` where a present `null`
//!   stays `Some(Value::Null)`.
//! - Keys the schema does not know are ignored when parsing; [`crate::Event`] keeps the raw bytes.

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::event_type::EventType;

mod abort;
mod assistant;
mod binary_asset;
mod command;
mod compaction;
mod external_tool;
mod hook;
mod live;
mod mcp;
mod model_change;
mod permission;
mod plan_review;
mod rewind;
mod session;
mod skill;
mod stream;
mod subagent;
mod system;
mod tool;
mod typed;
mod ui;
mod user;

pub use abort::*;
pub use assistant::*;
pub use binary_asset::*;
pub use command::*;
pub use compaction::*;
pub use external_tool::*;
pub use hook::*;
pub use live::*;
pub use mcp::*;
pub use model_change::*;
pub use permission::*;
pub use plan_review::*;
pub use rewind::*;
pub use session::*;
pub use skill::*;
pub use stream::*;
pub use subagent::*;
pub use system::*;
pub use tool::*;
pub use typed::{TypedEvent, typed};
pub use ui::*;
pub use user::*;

/// The typed `data` of one event type.
pub trait Payload: Serialize + DeserializeOwned {
    /// The event type this payload belongs to.
    const TYPE: &'static str;

    /// [`Self::TYPE`] as an [`EventType`].
    fn event_type() -> EventType {
        EventType::from_static(Self::TYPE)
    }
}

/// Implements [`Payload`] for a struct.
macro_rules! payload {
    ($ty:ty, $name:literal) => {
        impl $crate::payload::Payload for $ty {
            const TYPE: &'static str = $name;
        }
    };
}
pub(crate) use payload;

/// Serde `with` module for optional `T|null` fields held as `Option<Option<T>>`.
///
/// Plain `Option<T>` reads `null` as absent, so `"contextTier":null` would vanish on the way
/// back; this keeps the three states apart: `None` = key absent (pair it with
/// `skip_serializing_if = "Option::is_none"` and `default`), `Some(None)` = `null`,
/// `Some(Some(v))` = a value.
pub(crate) mod nullable {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub(crate) fn serialize<T: Serialize, S: Serializer>(
        value: &Option<Option<T>>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match value {
            Some(Some(v)) => v.serialize(s),
            // `None` is skipped by `skip_serializing_if`; writing null for it too is harmless.
            Some(None) | None => s.serialize_none(),
        }
    }

    pub(crate) fn deserialize<'de, T: Deserialize<'de>, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Option<T>>, D::Error> {
        // Only called when the key is present; `default` covers the absent case.
        Option::<T>::deserialize(d).map(Some)
    }
}

/// `deserialize_with` for opaque JSON fields: a present key is `Some`, even when it is `null`.
pub(crate) fn present<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<serde_json::Value>, D::Error> {
    serde::Deserialize::deserialize(d).map(Some)
}
