//! Background sub-agents (`task` with `mode: "background"`) and their later rounds
//! (`write_agent`): the call answers at once, and the agent's loop (`subagent.rs`) runs beside
//! the main agent's turns, polled by the message's task ([`Actor::run_turns`]), so the main
//! agent goes on while it works, as the runtime's does. An agent lives within the message that
//! started or woke it: the message does not go idle while one of its agents runs (the main
//! agent is woken for each agent that goes idle, `message_loop.rs`), so idle, shutdown and a resume
//! never find one running in this process. The next turn of the main agent tells its model
//! which agents went idle (`system.notification`, as the runtime does); `read_agent` gives
//! their answers.

use futures_util::future::BoxFuture;
use futures_util::stream::{FuturesUnordered, StreamExt};
use serde_json::json;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use turnstile_journal::payload::SystemNotification;

use super::LoopError;
use super::actor::Actor;
use super::agent_jobs::{AgentJob, BackgroundSender};
use super::message::Message;
use super::tool_call::Turn;
use crate::autopilot::AgentMode;
use turnstile_providers::ToolCall;
use turnstile_tools::agents::{AgentRecord, AgentStatus};
use turnstile_tools::task::{TaskArgs, started_text};
use turnstile_tools::{ToolFailure, ToolOutput};

/// The `delivery` of a round whose message woke an idle agent.
const WOKEN: &str = "idle";
/// The `delivery` of a round whose message waited for the round before it.
const QUEUED: &str = "queued";

/// What a background agent keeps of the message it runs in: its cancellation (an abort
/// stops it too), mode and request headers.
#[derive(Clone)]
pub(super) struct AgentScope {
    interaction_id: String,
    message_id: String,
    mode: AgentMode,
    cancel: CancellationToken,
    headers: Vec<(String, String)>,
}

impl AgentScope {
    /// The scope of the agents `msg` starts.
    pub(super) fn of(msg: &Message<'_>) -> Self {
        AgentScope {
            interaction_id: msg.interaction_id.clone(),
            message_id: msg.message_id.clone(),
            mode: msg.mode,
            cancel: msg.cancel.clone(),
            headers: msg.headers.clone(),
        }
    }
}

/// The running agents of one message and the work handed to it.
pub(super) struct AgentRunner<'a> {
    jobs: mpsc::UnboundedReceiver<AgentJob>,
    running: FuturesUnordered<BoxFuture<'a, Result<(), LoopError>>>,
    scope: AgentScope,
}

impl<'a> AgentRunner<'a> {
    /// A runner for the agents of `msg`, and the sender its turns hand them over by.
    pub(super) fn new(msg: &Message<'_>) -> (Self, BackgroundSender) {
        let (sender, jobs) = mpsc::unbounded_channel();
        let runner = AgentRunner {
            jobs,
            running: FuturesUnordered::new(),
            scope: AgentScope::of(msg),
        };
        (runner, sender)
    }

    /// Whether an agent is running or waits to start.
    pub(super) fn busy(&self) -> bool {
        !self.running.is_empty() || !self.jobs.is_empty()
    }

    fn take(&mut self, actor: &'a Actor, job: AgentJob) {
        let scope = self.scope.clone();
        self.running
            .push(Box::pin(async move { actor.run_job(job, scope).await }));
    }

    /// Drives `work` to its end while the agents run beside it.
    pub(super) async fn beside<T>(
        &mut self,
        actor: &'a Actor,
        work: impl Future<Output = Result<T, LoopError>>,
    ) -> Result<T, LoopError> {
        tokio::pin!(work);
        let out = loop {
            tokio::select! {
                biased;
                Some(job) = self.jobs.recv() => self.take(actor, job),
                Some(ended) = self.running.next(), if !self.running.is_empty() => ended?,
                out = &mut work => break out?,
            }
        };
        // Work handed over just as `work` ended starts too.
        while let Ok(job) = self.jobs.try_recv() {
            self.take(actor, job);
        }
        Ok(out)
    }

    /// Waits until one agent has gone idle (or failed), or every agent has; `false` when
    /// none was running.
    pub(super) async fn next_idle(&mut self, actor: &'a Actor) -> Result<bool, LoopError> {
        while let Ok(job) = self.jobs.try_recv() {
            self.take(actor, job);
        }
        match self.running.next().await {
            Some(ended) => ended.map(|()| true),
            None => Ok(false),
        }
    }

    /// Waits for every agent to end (after an abort they end at once, interrupted).
    pub(super) async fn drain(&mut self, actor: &'a Actor) -> Result<(), LoopError> {
        while self.next_idle(actor).await? {}
        Ok(())
    }
}

impl Actor {
    /// Starts the sub-agent of the `task` call `call`: a sync one runs to its answer here; a
    /// background one is handed to the message's runner and the call answers with its id.
    pub(super) async fn start_subagent(
        &self,
        call: &ToolCall,
        args: TaskArgs,
        turn: &Turn<'_, '_>,
    ) -> Result<Result<ToolOutput, ToolFailure>, LoopError> {
        let background = args.background;
        let id = self.agents.start(
            &args.name,
            &call.id,
            args.agent_type,
            &args.description,
            background,
        );
        if !background {
            // A sync agent is listed and read like a background one; it takes no message.
            let outcome = Box::pin(self.subagent(&call.id, args, turn.msg)).await?;
            let answer = match &outcome {
                Ok(output) => Ok(output.content.clone()),
                Err(failure) => Err(failure.message.clone()),
            };
            self.agents.finish_round(&call.id, answer);
            return Ok(outcome);
        }
        // For people the call shows what the agent was asked, as the runtime's does.
        let detail = format!(
            "Prompt to {} agent ({id}):\n{}",
            args.agent_type.name(),
            args.prompt
        );
        let job = AgentJob::Start(call.id.clone(), args);
        self.hand_over(job, turn).await?;
        Ok(Ok(ToolOutput::detailed(started_text(&id), detail)))
    }

    /// Starts the round `write_agent` woke the idle agent of `tool_call_id` for.
    pub(super) async fn wake_agent(
        &self,
        tool_call_id: String,
        message: String,
        turn: &Turn<'_, '_>,
    ) -> Result<(), LoopError> {
        self.hand_over(AgentJob::Wake(tool_call_id, message), turn)
            .await
    }

    /// Hands `job` to the message's runner; without one (a call a resume continues, a
    /// sub-agent's call) the agent runs inside the call: its events and answers are the same,
    /// only the call takes longer.
    async fn hand_over(&self, job: AgentJob, turn: &Turn<'_, '_>) -> Result<(), LoopError> {
        let job = match turn.background {
            Some(runner) => match runner.send(job) {
                Ok(()) => return Ok(()),
                Err(refused) => refused.0,
            },
            None => job,
        };
        Box::pin(self.background_agent(job, turn.msg)).await
    }

    /// Runs a handed-over job in its own view of the message.
    async fn run_job(&self, job: AgentJob, scope: AgentScope) -> Result<(), LoopError> {
        let msg = Message::new(
            scope.interaction_id,
            scope.message_id,
            scope.mode,
            &scope.cancel,
            scope.headers,
        );
        self.background_agent(job, &msg).await
    }

    /// Runs an agent's round, then each message queued for it meanwhile, and records how each
    /// ended for `read_agent`; the agent is idle (or failed) when this returns.
    async fn background_agent(&self, job: AgentJob, msg: &Message<'_>) -> Result<(), LoopError> {
        let (call_id, mut answer) = match job {
            AgentJob::Start(call_id, args) => {
                let outcome = Box::pin(self.subagent(&call_id, args, msg)).await?;
                let answer = outcome.map(|o| o.content).map_err(|f| f.message);
                (call_id, answer)
            }
            AgentJob::Wake(call_id, message) => {
                let answer = Box::pin(self.continue_agent(&call_id, message, WOKEN, msg)).await?;
                (call_id, answer)
            }
        };
        while let Some(next) = self.agents.finish_round(&call_id, answer) {
            answer = Box::pin(self.continue_agent(&call_id, next, QUEUED, msg)).await?;
        }
        Ok(())
    }

    /// Records a `system.notification` for each background agent that went idle (or failed)
    /// since the last turn and gives the texts the model reads after the history (where the
    /// fold puts them).
    pub(super) fn announce_ended_agents(&self) -> Result<Vec<String>, LoopError> {
        let mut texts = Vec::new();
        for record in self.agents.take_ended() {
            let note = notification(&record);
            self.emitter.emit(&note)?;
            texts.push(note.content);
        }
        Ok(texts)
    }
}

/// The runtime's notification of an agent that went idle; a failed first round (which this
/// engine reports as failed, not idle) in the same shape.
fn notification(record: &AgentRecord) -> SystemNotification {
    let kind_name = record.agent_type.name();
    let id = &record.id;
    let (text, kind) = match record.status {
        AgentStatus::Failed(_) => (
            format!(
                "Agent \"{id}\" ({kind_name}) has failed. Use read_agent with agent_id \"{id}\" to read why."
            ),
            "agent_failed",
        ),
        _ => (
            format!(
                "Agent \"{id}\" ({kind_name}) has finished processing and is now idle. Use read_agent with agent_id \"{id}\" to read the results, or write_agent to send follow-up messages."
            ),
            "agent_idle",
        ),
    };
    SystemNotification {
        content: format!("<system_notification>\n{text}\n</system_notification>"),
        kind: json!({
            "type": kind,
            "agentId": record.id,
            "agentType": kind_name,
            "description": record.description,
        }),
    }
}
