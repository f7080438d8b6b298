//! The session's sub-agents as `read_agent`, `list_agents` and `write_agent` see them: who
//! they are, how far they got, the answer of each round, and the messages waiting for them.
//! `task` adds them, the session records how each round ended, `write_agent` delivers
//! follow-up messages (a new round of an idle agent, or queued behind the running one).

use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use super::task::AgentType;

/// How far an agent got.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentStatus {
    /// A round is running.
    Running,
    /// Its last round answered: it waits for a message (`write_agent`).
    Idle,
    /// Its first round ended without an answer: why. It takes no message.
    Failed(String),
}

impl AgentStatus {
    /// The status word the reports use.
    pub fn word(&self) -> &'static str {
        match self {
            AgentStatus::Running => "running",
            AgentStatus::Idle => "idle",
            AgentStatus::Failed(_) => "failed",
        }
    }
}

/// One finished round of an agent: the message that started it (none for the task's own
/// prompt, round 0) and the agent's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentTurn {
    /// The follow-up message of this round (`None`: the first round).
    pub message: Option<String>,
    /// The answer the round ended with (empty when its model call failed).
    pub response: String,
}

/// One agent as the reports show it.
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
    /// Started by a background `task` (only those take messages).
    pub background: bool,
    /// How far it got.
    pub status: AgentStatus,
    /// Its finished rounds, in order.
    pub turns: Vec<AgentTurn>,
    /// The message of the round running now, if it is a follow-up.
    pub running_message: Option<String>,
    /// Messages delivered while a round runs, each the start of a later round.
    pub queued: VecDeque<String>,
    /// When its `task` started (the reports' elapsed time runs from here, idle time included,
    /// as the runtime counts it).
    pub started: Instant,
}

impl AgentRecord {
    /// Seconds since its `task` started.
    pub fn elapsed_secs(&self) -> u64 {
        self.started.elapsed().as_secs()
    }
}

/// Why a message could not be delivered to an agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Undeliverable {
    /// The session has no agent of that id.
    NotFound,
    /// The agent was started by a sync `task`.
    SyncMode,
    /// The agent is in a state that takes no message (its status word).
    Closed(&'static str),
}

/// What a delivered message does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delivery {
    /// The agent was idle: the caller starts its next round with the message now (the `task`
    /// call id, the message).
    Wake(String, String),
    /// The agent is running: the message starts a round when the running one ends.
    Queued,
}

/// The agents of one session, in the order they started; they are few (each is a model
/// conversation), so a list is enough.
#[derive(Debug, Default)]
pub struct Agents {
    records: Mutex<Vec<AgentRecord>>,
    /// The `task` call ids of background agents that went idle or failed and were not yet
    /// announced to the model.
    unannounced: Mutex<Vec<String>>,
    /// Woken whenever a round ends, for `read_agent`'s wait.
    ended: Notify,
    /// The session the agents belong to (`list_agents`' owner column; none: left out).
    owner: Option<String>,
}

impl Agents {
    /// The agents of the session `owner`.
    pub fn owned_by(owner: String) -> Self {
        Agents {
            owner: Some(owner),
            ..Agents::default()
        }
    }

    /// The session the agents belong to.
    pub fn owner(&self) -> Option<&str> {
        self.owner.as_deref()
    }

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
        background: bool,
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
            background,
            status: AgentStatus::Running,
            turns: Vec::new(),
            running_message: None,
            queued: VecDeque::new(),
            started: Instant::now(),
        });
        id
    }

    /// Records how the running round of the agent of `tool_call_id` ended: its answer, or
    /// (`Err`) why it failed. Gives the next queued message when one waits: the agent stays
    /// running and the caller starts that round; otherwise the agent goes idle (failed, when
    /// its first round failed) and a background agent is left to announce.
    pub fn finish_round(
        &self,
        tool_call_id: &str,
        outcome: Result<String, String>,
    ) -> Option<String> {
        let next = {
            let mut records = self.lock();
            let record = records
                .iter_mut()
                .find(|r| r.tool_call_id == tool_call_id)?;
            let first = record.turns.is_empty() && record.running_message.is_none();
            let message = record.running_message.take();
            match outcome {
                Err(why) if first => {
                    // A task that never answered has nothing to follow up on.
                    record.status = AgentStatus::Failed(why);
                    record.queued.clear();
                }
                outcome => record.turns.push(AgentTurn {
                    message,
                    response: outcome.unwrap_or_default(),
                }),
            }
            let next = match record.status {
                AgentStatus::Failed(_) => None,
                _ => record.queued.pop_front(),
            };
            match &next {
                Some(message) => record.running_message = Some(message.clone()),
                None => {
                    if record.status == AgentStatus::Running {
                        record.status = AgentStatus::Idle;
                    }
                    if record.background {
                        self.unannounced
                            .lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .push(tool_call_id.to_owned());
                    }
                }
            }
            next
        };
        self.ended.notify_waiters();
        next
    }

    /// Checks that the agent `id` can take a message, without delivering it; gives its status.
    pub fn can_receive(&self, id: &str) -> Result<AgentStatus, Undeliverable> {
        let records = self.lock();
        let record = records.iter().find(|r| r.id == id);
        receivable(record).map(|r| r.status.clone())
    }

    /// Delivers `message` to the agent `id`: an idle agent's next round starts with it now
    /// (the caller runs it), a running agent takes it after its round.
    pub fn deliver(&self, id: &str, message: &str) -> Result<Delivery, Undeliverable> {
        let mut records = self.lock();
        let record = records.iter_mut().find(|r| r.id == id);
        receivable(record.as_deref())?;
        let Some(record) = record else {
            return Err(Undeliverable::NotFound);
        };
        if record.status == AgentStatus::Running {
            record.queued.push_back(message.to_owned());
            return Ok(Delivery::Queued);
        }
        record.status = AgentStatus::Running;
        record.running_message = Some(message.to_owned());
        Ok(Delivery::Wake(
            record.tool_call_id.clone(),
            message.to_owned(),
        ))
    }

    /// The ids of the background agents that can take a message now, in start order.
    pub fn receiving(&self) -> Vec<String> {
        self.lock()
            .iter()
            .filter(|r| r.background && !matches!(r.status, AgentStatus::Failed(_)))
            .map(|r| r.id.clone())
            .collect()
    }

    /// The background agents that went idle or failed since the last call, in that order.
    pub fn take_ended(&self) -> Vec<AgentRecord> {
        let ids = std::mem::take(&mut *self.unannounced.lock().unwrap_or_else(|p| p.into_inner()));
        let records = self.lock();
        ids.iter()
            .filter_map(|id| records.iter().find(|r| &r.tool_call_id == id).cloned())
            .collect()
    }

    /// Whether an ended round waits to be announced.
    pub fn has_unannounced(&self) -> bool {
        !self
            .unannounced
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_empty()
    }

    /// The agent `id`.
    pub fn get(&self, id: &str) -> Option<AgentRecord> {
        self.lock().iter().find(|r| r.id == id).cloned()
    }

    /// Every agent, in the order they started.
    pub fn list(&self) -> Vec<AgentRecord> {
        self.lock().clone()
    }

    /// The agent `id` once its round has ended, or as it is when `timeout` has passed first;
    /// `None` when there is no such agent. The `bool` says whether the wait timed out.
    pub async fn wait(&self, id: &str, timeout: Duration) -> Option<(AgentRecord, bool)> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            // Registered before the check, so an end in between is not missed.
            let woken = self.ended.notified();
            let record = self.get(id)?;
            if record.status != AgentStatus::Running {
                return Some((record, false));
            }
            if tokio::time::timeout_at(deadline, woken).await.is_err() {
                return self.get(id).map(|r| {
                    let timed_out = r.status == AgentStatus::Running;
                    (r, timed_out)
                });
            }
        }
    }
}

/// The agent, if it exists and can take a message: a background agent that has not failed.
fn receivable(record: Option<&AgentRecord>) -> Result<&AgentRecord, Undeliverable> {
    let record = record.ok_or(Undeliverable::NotFound)?;
    if !record.background {
        return Err(Undeliverable::SyncMode);
    }
    match record.status {
        AgentStatus::Failed(_) => Err(Undeliverable::Closed(record.status.word())),
        _ => Ok(record),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_the_names_made_unique() {
        let agents = Agents::default();
        assert_eq!(
            agents.start("reader", "c1", AgentType::Explore, "d", true),
            "reader"
        );
        assert_eq!(
            agents.start("reader", "c2", AgentType::Explore, "d", true),
            "reader-2"
        );
        assert_eq!(agents.start(" ", "c3", AgentType::Task, "d", false), "task");
        assert_eq!(agents.list().len(), 3);
        assert_eq!(agents.get("reader-2").unwrap().tool_call_id, "c2");
    }

    #[tokio::test]
    async fn a_wait_ends_when_the_round_does() {
        let agents = std::sync::Arc::new(Agents::default());
        agents.start("a", "c1", AgentType::Explore, "d", true);
        let waiting = {
            let agents = std::sync::Arc::clone(&agents);
            tokio::spawn(async move { agents.wait("a", Duration::from_secs(3600)).await })
        };
        tokio::task::yield_now().await;
        assert_eq!(agents.finish_round("c1", Ok("done".into())), None);
        let (record, timed_out) = waiting.await.unwrap().unwrap();
        assert!(!timed_out);
        assert_eq!(record.status, AgentStatus::Idle);
        assert_eq!(record.turns[0].response, "done");
        assert!(agents.wait("nope", Duration::ZERO).await.is_none());
        assert_eq!(agents.take_ended().len(), 1);
        assert!(agents.take_ended().is_empty());
    }

    #[tokio::test]
    async fn a_wait_with_no_time_gives_the_running_agent() {
        let agents = Agents::default();
        agents.start("a", "c1", AgentType::Explore, "d", true);
        let (record, timed_out) = agents.wait("a", Duration::ZERO).await.unwrap();
        assert_eq!(record.status, AgentStatus::Running);
        assert!(timed_out);
    }

    #[test]
    fn an_idle_agent_wakes_and_a_running_one_queues() {
        let agents = Agents::default();
        agents.start("a", "c1", AgentType::Explore, "d", true);
        assert_eq!(agents.deliver("a", "one"), Ok(Delivery::Queued));
        // The queued message starts the next round at once: no idle in between, no notice.
        assert_eq!(
            agents.finish_round("c1", Ok("first".into())),
            Some("one".into())
        );
        assert!(agents.take_ended().is_empty());
        assert_eq!(agents.finish_round("c1", Ok("second".into())), None);
        assert_eq!(agents.take_ended().len(), 1);
        assert_eq!(
            agents.deliver("a", "two"),
            Ok(Delivery::Wake("c1".into(), "two".into()))
        );
        assert_eq!(agents.get("a").unwrap().status, AgentStatus::Running);
        agents.finish_round("c1", Ok("third".into()));
        let turns = agents.get("a").unwrap().turns;
        let messages: Vec<Option<&str>> = turns.iter().map(|t| t.message.as_deref()).collect();
        assert_eq!(messages, [None, Some("one"), Some("two")]);
    }

    #[test]
    fn failed_sync_and_unknown_agents_take_no_message() {
        let agents = Agents::default();
        agents.start("bg", "c1", AgentType::Explore, "d", true);
        agents.deliver("bg", "later").unwrap();
        agents.finish_round("c1", Err("boom".into()));
        assert_eq!(
            agents.get("bg").unwrap().status,
            AgentStatus::Failed("boom".into())
        );
        assert_eq!(
            agents.deliver("bg", "x"),
            Err(Undeliverable::Closed("failed"))
        );
        agents.start("sync", "c2", AgentType::Explore, "d", false);
        agents.finish_round("c2", Ok("answer".into()));
        assert_eq!(agents.deliver("sync", "x"), Err(Undeliverable::SyncMode));
        assert_eq!(agents.deliver("nope", "x"), Err(Undeliverable::NotFound));
        // A sync agent is not announced: its answer was the call's result.
        assert_eq!(agents.take_ended().len(), 1);
        assert_eq!(agents.receiving(), Vec::<String>::new());
    }

    #[test]
    fn a_failed_follow_up_leaves_the_agent_idle() {
        let agents = Agents::default();
        agents.start("a", "c1", AgentType::Explore, "d", true);
        agents.finish_round("c1", Ok("first".into()));
        agents.deliver("a", "again").unwrap();
        agents.finish_round("c1", Err("model down".into()));
        let record = agents.get("a").unwrap();
        assert_eq!(record.status, AgentStatus::Idle);
        assert_eq!(record.turns.len(), 2);
        assert_eq!(record.turns[1].response, "");
    }
}
