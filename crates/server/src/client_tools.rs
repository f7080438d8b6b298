//! The tools a session's clients implement (`tools` of create/resume), by connection.
//!
//! Several clients may hold one session (a second `session.resume` of an idle session in the
//! same server): the model is offered the union of their tools, as the Copilot CLI offers
//! it, and a call is announced to all of them (`external_tool.requested`), the one that
//! implements it answering. A client that leaves takes its tools with it: the next model
//! request no longer offers them. The order is the order in which the connections declared
//! them, so the recorded requests are the same whatever the connection ids; a name two
//! clients declare is offered once, the first declaration's.
//!
//! Bounds: each connection's list is bounded by the size of its open request, and the list
//! of connections by the server's connections.

use std::sync::Mutex;

use turnstile_tools::ToolSpec;

/// One session's client tools, by connection.
#[derive(Debug, Default)]
pub(crate) struct ClientTools {
    /// `(connection, its tools)` in the order the connections declared them.
    by_peer: Mutex<Vec<(u64, Vec<ToolSpec>)>>,
}

impl ClientTools {
    /// The tools `peer` declared when it opened the session.
    pub(crate) fn declared_by(peer: u64, tools: Vec<ToolSpec>) -> Self {
        ClientTools {
            by_peer: Mutex::new(vec![(peer, tools)]),
        }
    }

    /// Every client tool offered to the model: each connection's in the order they were
    /// declared, a name declared twice taken from the first.
    pub(crate) fn all(&self) -> Vec<ToolSpec> {
        let mut out: Vec<ToolSpec> = Vec::new();
        for tool in self.lock().iter().flat_map(|(_, tools)| tools) {
            if !out.iter().any(|t| t.name == tool.name) {
                out.push(tool.clone());
            }
        }
        out
    }

    /// Forgets the tools of connection `peer`; true when it had declared any.
    pub(crate) fn leave(&self, peer: u64) -> bool {
        let mut peers = self.lock();
        let had = peers
            .iter()
            .any(|(p, tools)| *p == peer && !tools.is_empty());
        peers.retain(|(p, _)| *p != peer);
        had
    }

    /// Takes over, from the same session's `earlier` opening, the tools of the connections
    /// in `staying`, in their earlier order and before this opening's own; a connection that
    /// declared again keeps its place with its new tools.
    pub(crate) fn keep_from(&self, earlier: &ClientTools, staying: &[u64]) {
        let before = earlier.lock().clone();
        let mut peers = self.lock();
        let mut mine = std::mem::take(&mut *peers);
        for (peer, tools) in before {
            if !staying.contains(&peer) {
                continue;
            }
            match mine.iter().position(|(p, _)| *p == peer) {
                Some(at) => peers.push(mine.remove(at)),
                None => peers.push((peer, tools)),
            }
        }
        peers.append(&mut mine);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(u64, Vec<ToolSpec>)>> {
        // A panic while the list was held left it whole (every change is one assignment).
        self.by_peer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: format!("{name} tool"),
            parameters: json!({"type": "object"}),
            ..Default::default()
        }
    }

    fn names(tools: &ClientTools) -> Vec<String> {
        tools.all().into_iter().map(|t| t.name).collect()
    }

    #[test]
    fn a_joining_client_adds_its_tools_after_the_staying_ones() {
        let first = ClientTools::declared_by(7, vec![tool("city")]);
        // The session reopened by connection 9, connection 7 staying.
        let reopened = ClientTools::declared_by(9, vec![tool("currency")]);
        reopened.keep_from(&first, &[9, 7]);
        assert_eq!(names(&reopened), ["city", "currency"]);
    }

    #[test]
    fn a_client_without_tools_keeps_the_others() {
        let first = ClientTools::declared_by(7, vec![tool("magic_number")]);
        let reopened = ClientTools::declared_by(9, Vec::new());
        reopened.keep_from(&first, &[9, 7]);
        assert_eq!(names(&reopened), ["magic_number"]);
    }

    #[test]
    fn a_leaving_client_takes_its_tools_and_only_its() {
        let first = ClientTools::declared_by(7, vec![tool("stable")]);
        let reopened = ClientTools::declared_by(9, vec![tool("ephemeral")]);
        reopened.keep_from(&first, &[9, 7]);
        assert!(reopened.leave(9));
        assert_eq!(names(&reopened), ["stable"]);
        assert!(!reopened.leave(9));
        assert!(!reopened.leave(42));
        assert_eq!(names(&reopened), ["stable"]);
    }

    #[test]
    fn a_client_that_declares_again_keeps_its_place_with_its_new_tools() {
        let first = ClientTools::declared_by(7, vec![tool("a")]);
        first.keep_from(&ClientTools::default(), &[7]);
        let second = ClientTools::declared_by(9, vec![tool("b")]);
        second.keep_from(&first, &[9, 7]);
        // Connection 7 resumes again with another tool, 9 staying.
        let third = ClientTools::declared_by(7, vec![tool("c")]);
        third.keep_from(&second, &[7, 9]);
        assert_eq!(names(&third), ["c", "b"]);
    }

    #[test]
    fn a_gone_connection_is_not_taken_over_and_a_name_is_offered_once() {
        let first = ClientTools::declared_by(7, vec![tool("x"), tool("y")]);
        let reopened = ClientTools::declared_by(9, vec![tool("y"), tool("z")]);
        reopened.keep_from(&first, &[9]);
        assert_eq!(names(&reopened), ["y", "z"]);
        reopened.keep_from(&first, &[9, 7]);
        assert_eq!(names(&reopened), ["x", "y", "z"]);
    }
}
