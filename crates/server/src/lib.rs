//! JSON-RPC 2.0 server speaking the Copilot SDK protocol v3.
//!
//! Not built yet: this crate only fixes its place in the graph
//! (journal <- replay <- loop <- server <- cli).
pub use turnstile_loop as agent_loop;
