//! [`TypedEvent`]: an event's `data` parsed by its type, for code that matches on events.

use serde_json::value::RawValue;

use super::*;
use crate::event::{Event, EventError, payload_json};
use crate::event_type::EventType;

/// Declares [`TypedEvent`] and its dispatch from one list, so the variants, [`TypedEvent::TYPES`]
/// and [`typed`] cannot drift apart.
macro_rules! typed_events {
    ($($variant:ident),* $(,)?) => {
        /// An event's `data` parsed into the payload struct of its type.
        ///
        /// Variants are not boxed: a `TypedEvent` is built per event and matched right away,
        /// so its size costs a copy, while a box would cost an allocation per event.
        #[allow(clippy::large_enum_variant)]
        #[derive(Debug, Clone, PartialEq)]
        pub enum TypedEvent {
            $(
                #[doc = concat!("See [`", stringify!($variant), "`].")]
                $variant($variant),
            )*
            /// A type without a payload struct here; its `data` stays raw on the [`Event`].
            Other(EventType),
        }

        impl TypedEvent {
            /// Every event type that has a payload struct, in declaration order.
            pub const TYPES: &'static [&'static str] = &[$(<$variant as Payload>::TYPE),*];

            /// The event's type.
            pub fn event_type(&self) -> EventType {
                match self {
                    $(TypedEvent::$variant(_) => <$variant as Payload>::event_type(),)*
                    TypedEvent::Other(t) => t.clone(),
                }
            }

            /// The payload serialized as the event's `data`; `None` for [`TypedEvent::Other`].
            pub fn to_data(&self) -> Option<Box<RawValue>> {
                match self {
                    $(TypedEvent::$variant(p) => Some(payload_json(p)),)*
                    TypedEvent::Other(_) => None,
                }
            }
        }

        $(
            impl From<$variant> for TypedEvent {
                fn from(p: $variant) -> Self {
                    TypedEvent::$variant(p)
                }
            }
        )*

        /// Parses `event.data` into the payload struct of its type.
        ///
        /// Types without a payload struct give [`TypedEvent::Other`]; a known type whose `data`
        /// does not fit its struct is an [`EventError::Payload`].
        pub fn typed(event: &Event) -> Result<TypedEvent, EventError> {
            $(
                if event.event_type.as_str() == <$variant as Payload>::TYPE {
                    return event.payload::<$variant>().map(TypedEvent::$variant);
                }
            )*
            Ok(TypedEvent::Other(event.event_type.clone()))
        }
    };
}

typed_events!(
    SessionStart,
    SessionResume,
    SessionError,
    SessionIdle,
    SessionTaskComplete,
    SessionShutdown,
    UserMessage,
    SystemMessage,
    AssistantTurnStart,
    AssistantMessage,
    AssistantMessageDelta,
    AssistantReasoning,
    AssistantUsage,
    AssistantTurnEnd,
    AssistantTurnRetry,
    Abort,
    ToolExecutionStart,
    ToolExecutionPartialResult,
    ToolExecutionProgress,
    ToolUserRequested,
    ToolExecutionComplete,
    PermissionRequested,
    PermissionCompleted,
    ExternalToolRequested,
    ExternalToolCompleted,
    HookStart,
    HookEnd,
    SessionUsageInfo,
    SessionTitleChanged,
    SessionToolsUpdated,
    PendingMessagesModified,
    SessionTodosChanged,
    SessionBackgroundTasksChanged,
    SessionManagedSettingsResolved,
    ModelCallStart,
    AssistantIdle,
    AssistantMessageStart,
    AssistantStreamingDelta,
    AssistantToolCallDelta,
    SessionModelChange,
    SessionBinaryAsset,
    McpServerStatusChanged,
    McpServersLoaded,
    McpToolsListChanged,
    SubagentStarted,
    SubagentCompleted,
    SubagentFailed,
    SessionSkillsLoaded,
    SkillInvoked,
    SystemNotification,
);

impl TypedEvent {
    /// A new event of this payload (fresh id, current time); `None` for [`TypedEvent::Other`],
    /// which has no `data` to write.
    pub fn to_event(&self, parent_id: Option<uuid::Uuid>) -> Option<Event> {
        let data = self.to_data()?;
        Some(Event::with_raw_data(self.event_type(), data, parent_id))
    }
}

// Here rather than in `event.rs`: the envelope knows nothing of payload types, and this one
// method is where an `Event` meets the list of them.
impl Event {
    /// Parses `data` into the payload struct of its type ([`TypedEvent::Other`] for types
    /// without one).
    pub fn typed(&self) -> Result<TypedEvent, EventError> {
        typed(self)
    }
}
