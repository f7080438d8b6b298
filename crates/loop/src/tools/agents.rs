//! The session's background sub-agents (`task` with `mode: "background"`): who they are and
//! how far they got, shared by `task`, which adds them, the session, which records how each
//! ended, and `read_agent`/`list_agents`, which report them.

use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use super::task::AgentType;

/// How far a background agent got.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentStatus {
    /// Its loop is still running.
    Running,
    /// It answered: the text its parent reads.
    Completed(String),
    /// It ended without an answer: why.
    Failed(String),
}

impl AgentStatus {
    /// The status word the reports use.
    pub fn word(&self) -> &'static str {
        match self {
            AgentStatus::Running => "running",
            AgentStatus::Completed(_) => "completed",
            AgentStatus::Failed(_) => "failed",
        }
    }
}

/// One background agent as the reports show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentRecord {
    /// The id `read_agent` takes (the name the model gave, made unique in the session).
    pub id: String,
    /// The `task` call that started it (its events' `agentId`).
    pub tool_call_id: String,
    /// Its type.
    pub agent_type: AgentType,
    /// The call's short description.
    pub description: String,
    /// How far it got.
    pub status: AgentStatus,
    /// When it started (for the elapsed time the reports give).
    pub started: Instant,
    /// When it ended, once it has.
    pub ended: Option<Instant>,
}

impl AgentRecord {
    /// Seconds it ran (so far, while running).
    pub fn elapsed_secs(&self) -> u64 {
        self.ended
            .unwrap_or_else(Instant::now)
            .duration_since(self.started)
            .as_secs()
    }
}

/// The background agents of one session, in the order they started; they are few (each is a
/// model conversation), so a list is enough.
#[derive(Debug, Default)]
pub struct Agents {
    records: Mutex<Vec<AgentRecord>>,
    /// The `task` call ids of agents that ended and were not yet announced to the model.
    unannounced: Mutex<Vec<String>>,
    /// Woken whenever an agent ends, for `read_agent`'s wait.
    ended: Notify,
}

impl Agents {
    fn lock(&self) -> MutexGuard<'_, Vec<AgentRecord>> {
        // A panic elsewhere cannot leave a record half-written: each change is one assignment.
        self.records.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Adds a running agent for the `task` call `tool_call_id` and gives its id: `name`, or
    /// `name-2`, `name-3`, … when the session already has an agent of that name.
    pub fn start(
        &self,
        name: &str,
        tool_call_id: &str,
        agent_type: AgentType,
        description: &str,
    ) -> String {
        let mut records = self.lock();
        let base = if name.trim().is_empty() {
            agent_type.name()
        } else {
            name.trim()
        };
        let taken = |id: &str| records.iter().any(|r| r.id == id);
        let mut id = base.to_owned();
        let mut n = 2;
        while taken(&id) {
            id = format!("{base}-{n}");
            n += 1;
        }
        records.push(AgentRecord {
            id: id.clone(),
            tool_call_id: tool_call_id.to_owned(),
            agent_type,
            description: description.to_owned(),
            status: AgentStatus::Running,
            started: Instant::now(),
            ended: None,
        });
        id
    }

    /// Records how the agent of the `task` call `tool_call_id` ended.
    pub fn finish(&self, tool_call_id: &str, status: AgentStatus) {
        {
            let mut records = self.lock();
            if let Some(r) = records.iter_mut().find(|r| r.tool_call_id == tool_call_id) {
                r.status = status;
                r.ended = Some(Instant::now());
                self.unannounced
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(tool_call_id.to_owned());
            }
        }
        self.ended.notify_waiters();
    }

    /// The agents that ended since the last call, in the order they ended.
    pub fn take_ended(&self) -> Vec<AgentRecord> {
        let ids = std::mem::take(&mut *self.unannounced.lock().unwrap_or_else(|p| p.into_inner()));
        let records = self.lock();
        ids.iter()
            .filter_map(|id| records.iter().find(|r| &r.tool_call_id == id).cloned())
            .collect()
    }

    /// The agent `id`.
    pub fn get(&self, id: &str) -> Option<AgentRecord> {
        self.lock().iter().find(|r| r.id == id).cloned()
    }

    /// Every agent, in the order they started.
    pub fn list(&self) -> Vec<AgentRecord> {
        self.lock().clone()
    }

    /// The agent `id` once it has ended, or as it is when `timeout` has passed first; `None`
    /// when there is no such agent.
    pub async fn wait(&self, id: &str, timeout: Duration) -> Option<AgentRecord> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            // Registered before the check, so an end in between is not missed.
            let woken = self.ended.notified();
            let record = self.get(id)?;
            if record.status != AgentStatus::Running {
                return Some(record);
            }
            if tokio::time::timeout_at(deadline, woken).await.is_err() {
                return self.get(id);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_the_names_made_unique() {
        let agents = Agents::default();
        assert_eq!(
            agents.start("reader", "c1", AgentType::Explore, "d"),
            "reader"
        );
        assert_eq!(
            agents.start("reader", "c2", AgentType::Explore, "d"),
            "reader-2"
        );
        assert_eq!(agents.start(" ", "c3", AgentType::Task, "d"), "task");
        assert_eq!(agents.list().len(), 3);
        assert_eq!(agents.get("reader-2").unwrap().tool_call_id, "c2");
    }

    #[tokio::test]
    async fn a_wait_ends_when_the_agent_does() {
        let agents = std::sync::Arc::new(Agents::default());
        agents.start("a", "c1", AgentType::Explore, "d");
        let waiting = {
            let agents = std::sync::Arc::clone(&agents);
            tokio::spawn(async move { agents.wait("a", Duration::from_secs(3600)).await })
        };
        tokio::task::yield_now().await;
        agents.finish("c1", AgentStatus::Completed("done".into()));
        let record = waiting.await.unwrap().unwrap();
        assert_eq!(record.status, AgentStatus::Completed("done".into()));
        assert!(agents.wait("nope", Duration::ZERO).await.is_none());
        assert_eq!(agents.take_ended().len(), 1);
        assert!(agents.take_ended().is_empty());
    }

    #[tokio::test]
    async fn a_wait_with_no_time_gives_the_running_agent() {
        let agents = Agents::default();
        agents.start("a", "c1", AgentType::Explore, "d");
        let record = agents.wait("a", Duration::ZERO).await.unwrap();
        assert_eq!(record.status, AgentStatus::Running);
    }
}
