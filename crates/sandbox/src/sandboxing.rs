//! Whether the processes a session starts are confined, and by what: the one value the tools,
//! the hooks and the MCP client carry from the session to the child they spawn.

use std::sync::Arc;

use crate::Sandbox;

/// Whether the processes a tool, a hook or an MCP server starts are confined, and by what.
#[derive(Debug, Clone, Default)]
pub enum Sandboxing {
    /// Unconfined: the user chose it (`--no-sandbox`), or outside a session.
    #[default]
    Off,
    /// Every process enters this sandbox before it runs anything.
    On(Arc<Sandbox>),
    /// The sandbox was required but could not be built: nothing is run, and this says why.
    Broken(String),
}

impl Sandboxing {
    /// The sandbox a child must enter (`None` when unconfined), or why nothing may run.
    pub fn to_enter(&self) -> Result<Option<Arc<Sandbox>>, &str> {
        match self {
            Sandboxing::Off => Ok(None),
            Sandboxing::On(sandbox) => Ok(Some(Arc::clone(sandbox))),
            Sandboxing::Broken(why) => Err(why),
        }
    }
}
