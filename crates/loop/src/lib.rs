//! The agent loop: session actor, model providers, tools, permissions, hooks, autopilot.
//!
//! Not built yet: this crate only fixes its place in the graph
//! (journal <- replay <- loop <- server <- cli).
pub use turnstile_replay as replay;
