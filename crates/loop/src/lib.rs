//! The agent loop: session actor, model providers, tools, permissions, hooks, autopilot.
//!
//! Only this crate talks to models, runs tools and owns a journal writer
//! (journal <- replay <- loop <- server <- cli).

pub mod model;
pub mod tools;
