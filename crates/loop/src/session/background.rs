//! Background sub-agents (`task` with `mode: "background"`): the call answers at once with
//! the agent's id, and the agent's loop (`subagent.rs`) runs alongside the other calls of the
//! parent's turn, polled by the same task. The turn ends when its calls and the agents they
//! started have ended, so no agent outlives the turn that started it: idle, shutdown and
//! a resume never find one running in this process. The next turn of the main agent tells
//! its model which agents ended (`system.notification`, as the runtime does); `read_agent`
//! gives their answers.

use std::future::Future;

use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use serde_json::json;
use tokio::sync::mpsc;
use turnstile_journal::payload::SystemNotification;

use super::LoopError;
use super::actor::Actor;
use super::message::Message;
use super::tool_call::{ToolsEnd, Turn};
use crate::model::ToolCall;
use crate::tools::agents::{AgentRecord, AgentStatus};
use crate::tools::task::{TaskArgs, started_text};
use crate::tools::{ToolFailure, ToolOutput};

/// Where a background `task` call hands its agent (the call's id, its checked arguments) to
/// the turn's runner.
pub(super) type BackgroundSender = mpsc::UnboundedSender<(String, TaskArgs)>;

impl Actor {
    /// Starts the sub-agent of the `task` call `call`: a sync one runs to its answer here; a
    /// background one is handed to the turn's runner and the call answers with its id.
    pub(super) async fn start_subagent(
        &self,
        call: &ToolCall,
        args: TaskArgs,
        turn: &Turn<'_, '_>,
    ) -> Result<Result<ToolOutput, ToolFailure>, LoopError> {
        if !args.background {
            return Box::pin(self.subagent(&call.id, args, turn.msg)).await;
        }
        let id = self
            .agents
            .start(&args.name, &call.id, args.agent_type, &args.description);
        let handed = match turn.background {
            Some(runner) => runner.send((call.id.clone(), args)).map_err(|e| e.0),
            None => Err((call.id.clone(), args)),
        };
        // Without a runner (a call a resume continues) the agent runs inside the call: its
        // events and answer are the same, only the call takes longer.
        if let Err((call_id, args)) = handed {
            Box::pin(self.background_agent(call_id, args, turn.msg)).await?;
        }
        Ok(Ok(ToolOutput::text(started_text(&id))))
    }

    /// Runs a background agent to its end and records how it ended for `read_agent`.
    async fn background_agent(
        &self,
        call_id: String,
        args: TaskArgs,
        msg: &Message<'_>,
    ) -> Result<(), LoopError> {
        let outcome = Box::pin(self.subagent(&call_id, args, msg)).await?;
        let status = match outcome {
            Ok(output) => AgentStatus::Completed(output.content),
            Err(failure) => AgentStatus::Failed(failure.message),
        };
        self.agents.finish(&call_id, status);
        Ok(())
    }

    /// Drives a turn's calls (`calls_done`) and the background agents they start (arriving
    /// on `started`) together, and ends when all of them have.
    pub(super) async fn alongside_agents<F>(
        &self,
        calls_done: F,
        mut started: mpsc::UnboundedReceiver<(String, TaskArgs)>,
        msg: &Message<'_>,
    ) -> Result<ToolsEnd, LoopError>
    where
        F: Future<Output = Result<ToolsEnd, LoopError>>,
    {
        tokio::pin!(calls_done);
        let mut agents = FuturesUnordered::new();
        let end = loop {
            tokio::select! {
                biased;
                Some((call_id, args)) = started.recv() => {
                    agents.push(self.background_agent(call_id, args, msg));
                }
                Some(ended) = agents.next(), if !agents.is_empty() => ended?,
                end = &mut calls_done => break end?,
            }
        };
        // An agent handed over as the last call ended is run too.
        while let Ok((call_id, args)) = started.try_recv() {
            agents.push(self.background_agent(call_id, args, msg));
        }
        while let Some(ended) = agents.next().await {
            ended?;
        }
        Ok(end)
    }

    /// Records a `system.notification` for each background agent that ended since the last
    /// turn and gives the texts the model reads after the history (where the fold puts them).
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

/// The runtime's notification of an ended agent, in its wording for this engine's one-answer
/// agents (they end, where the runtime's wait idle for `write_agent`).
fn notification(record: &AgentRecord) -> SystemNotification {
    let (ended, kind, what) = match record.status {
        AgentStatus::Failed(_) => ("has failed", "agent_failed", "to read why"),
        _ => ("has completed", "agent_completed", "to read the results"),
    };
    SystemNotification {
        content: format!(
            "<system_notification>\nAgent \"{id}\" ({kind_name}) {ended}. Use read_agent with agent_id \"{id}\" {what}.\n</system_notification>",
            id = record.id,
            kind_name = record.agent_type.name(),
        ),
        kind: json!({
            "type": kind,
            "agentId": record.id,
            "agentType": record.agent_type.name(),
            "description": record.description,
        }),
    }
}
