//! A session's custom agents: the ones its client gave (`customAgents` of create/resume), and
//! which one is selected for the turns that follow (`session.agent.*`). The selection is the
//! journal's (`subagent.selected` / `subagent.deselected`, as the Copilot CLI records it), so a
//! resume finds it again ([`selected_in_journal`]). The list is bounded by the open params'
//! size (`limits`' largest request).

use std::path::Path;
use std::sync::Mutex;

use serde::Deserialize;
use serde_json::{Value, json};
use turnstile_journal::{JournalReader, ReadMode};

/// `subagent.selected`: a custom agent is selected.
pub(crate) const SELECTED: &str = "subagent.selected";
/// `subagent.deselected`: back to the default agent.
pub(crate) const DESELECTED: &str = "subagent.deselected";

/// One custom agent as a client defines it (the SDK's `CustomAgentConfig`; its other fields,
/// `mcpServers`, `infer`, are not used by this engine).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AgentParams {
    pub(crate) name: String,
    pub(crate) display_name: Option<String>,
    pub(crate) description: Option<String>,
    /// The agent's instructions.
    #[allow(dead_code)]
    pub(crate) prompt: Option<String>,
    /// The tools it may use; all when absent.
    pub(crate) tools: Option<Vec<String>>,
    /// The model it is bound to (a provider-qualified one of the session's `providers` too).
    pub(crate) model: Option<String>,
}

impl AgentParams {
    /// The name shown for it: its `displayName`, else its name.
    pub(crate) fn shown_name(&self) -> &str {
        self.display_name.as_deref().unwrap_or(&self.name)
    }

    /// The schema's `AgentInfo` of it, as the Copilot CLI answers it (`id` is the name;
    /// `tools` and `model` only when the agent names them).
    pub(crate) fn info(&self) -> Value {
        let mut info = json!({
            "name": self.name,
            "displayName": self.shown_name(),
            "description": self.description.as_deref().unwrap_or_default(),
            "id": self.name,
        });
        if let Some(tools) = &self.tools {
            info["tools"] = json!(tools);
        }
        if let Some(model) = &self.model {
            info["model"] = json!(model);
        }
        info
    }

    /// The data of the `subagent.selected` that records its selection.
    pub(crate) fn selected_data(&self) -> Value {
        json!({
            "agentName": self.name,
            "agentDisplayName": self.shown_name(),
            "tools": self.tools,
        })
    }
}

/// The custom agents of one open session and the selected one.
#[derive(Debug, Default)]
pub(crate) struct SessionAgents {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    available: Vec<AgentParams>,
    selected: Option<String>,
}

impl SessionAgents {
    /// Sets the agents the opening client gave and the selection the journal holds (one no
    /// longer among them is dropped).
    pub(crate) fn configure(&self, available: Vec<AgentParams>, selected: Option<String>) {
        let mut state = self.lock();
        state.selected = selected.filter(|name| available.iter().any(|a| &a.name == name));
        state.available = available;
    }

    /// Every agent, in the order the client gave them.
    pub(crate) fn available(&self) -> Vec<AgentParams> {
        self.lock().available.clone()
    }

    /// The agent named `name`.
    pub(crate) fn find(&self, name: &str) -> Option<AgentParams> {
        self.lock()
            .available
            .iter()
            .find(|a| a.name == name)
            .cloned()
    }

    /// The selected agent.
    pub(crate) fn selected(&self) -> Option<AgentParams> {
        let state = self.lock();
        let name = state.selected.as_deref()?;
        state.available.iter().find(|a| a.name == name).cloned()
    }

    /// Notes the selection (`None`: the default agent).
    pub(crate) fn select(&self, name: Option<String>) {
        self.lock().selected = name;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The custom agent the journal at `events` left selected: the main agent's last
/// `subagent.selected` not followed by a `subagent.deselected`. The file is read line by line
/// (bounded memory); one that cannot be read selects none.
pub(crate) fn selected_in_journal(events: &Path) -> Option<String> {
    let reader = JournalReader::open(events, ReadMode::Lenient).ok()?;
    let mut selected = None;
    for record in reader.flatten() {
        let event = record.event;
        if event.agent_id.is_some() {
            continue;
        }
        match event.event_type.as_str() {
            SELECTED => {
                let data: Value = serde_json::from_str(event.data.get()).unwrap_or_default();
                selected = data["agentName"].as_str().map(str::to_owned);
            }
            DESELECTED => selected = None,
            _ => {}
        }
    }
    selected
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agent(name: &str, display: Option<&str>) -> AgentParams {
        AgentParams {
            name: name.into(),
            display_name: display.map(Into::into),
            description: None,
            prompt: None,
            tools: None,
            model: None,
        }
    }

    #[test]
    fn info_falls_back_to_the_name_and_leaves_out_absent_tools() {
        let info = agent("a", None).info();
        assert_eq!(info["displayName"], "a");
        assert_eq!(info["description"], "");
        assert!(info.get("tools").is_none());
        let mut with_tools = agent("b", Some("B"));
        with_tools.tools = Some(vec!["view".into()]);
        assert_eq!(with_tools.info()["tools"], json!(["view"]));
        assert_eq!(with_tools.selected_data()["agentDisplayName"], "B");
    }

    #[test]
    fn a_selection_of_an_agent_no_longer_given_is_dropped() {
        let agents = SessionAgents::default();
        agents.configure(vec![agent("a", None)], Some("gone".into()));
        assert!(agents.selected().is_none());
        agents.configure(vec![agent("a", None)], Some("a".into()));
        assert_eq!(agents.selected().map(|a| a.name), Some("a".into()));
    }
}
