//! Why a method of the SDK's schema is not served: the answer to a call of one is the Copilot
//! CLI's `-32601 "Unhandled method <name>"` with the reason, so a client learns what to do
//! instead. `docs/protocol.md` lists every method with the same reasons.

/// Methods the Copilot CLI 1.0.81-0 does not serve either: answered with its exact words
/// (`Unhandled method NAME`), the reason in the error's `data`.
pub(crate) const UNHANDLED_BY_THE_CLI: &[&str] = &[
    "session.mcp.moveLoadingToBackground",
    "session.mcp.oauth.probe",
];

/// Method name prefixes (or whole names) and why turnstile does not serve them; the first
/// match wins, so the specific entries come first.
pub(crate) const REASONS: &[(&str, &str)] = &[
    (
        "session.model.",
        "only model.getCurrent, model.switchTo and model.setReasoningEffort are served",
    ),
    ("session.mode.", "only mode.get and mode.set are served"),
    (
        "session.eventLog.",
        "only read, tail, registerInterest and releaseInterest are served",
    ),
    (
        "session.tools.",
        "tools are declared in session.create/resume; only handlePendingToolCall and initializeAndValidate are served",
    ),
    (
        "session.mcp.moveLoadingToBackground",
        "the Copilot CLI 1.0.81-0 does not serve it either; turnstile starts a session's servers before session.create answers",
    ),
    (
        "session.mcp.oauth.probe",
        "the Copilot CLI 1.0.81-0 does not serve it either; turnstile does no MCP OAuth",
    ),
    (
        "session.mcp.",
        "every other session.mcp method of the schema is served",
    ),
    (
        "mcp.",
        "turnstile discovers no MCP servers and installs none; servers are the configuration files' and session.create/resume's",
    ),
    (
        "session.ui.",
        "user input goes to the client as userInput.request; elicitation and handlePendingElicitation are served; turnstile makes no sampling or mode-switch requests",
    ),
    (
        "session.commands.finalizeInvocationEffect",
        "no command of this engine leaves an effect for the host to apply",
    ),
    (
        "commands.",
        "slash commands are the session's (session.commands.*)",
    ),
    ("session.canvas.", "turnstile has no canvases"),
    ("canvas.", "turnstile has no canvases"),
    ("session.factory.", "turnstile has no factories"),
    ("factory.", "turnstile has no factories"),
    (
        "session.workspaces.",
        "only listFiles, readFile, createFile, getWorkspace, listCheckpoints, readCheckpoint, diff and saveLargePaste are served (the files under files/ and checkpoints/ in the session's directory, and git's view of the working directory)",
    ),
    (
        "session.autopilotObjective.",
        "autopilot keeps no objective file",
    ),
    ("session.tasks.", "turnstile runs no background agents"),
    ("tasks.", "turnstile runs no background agents"),
    ("session.fleet.", "turnstile runs no background agents"),
    (
        "session.agent.setPrompt",
        "custom agents are the client's (customAgents); their prompts are not overridden",
    ),
    (
        "agentRegistry.",
        "custom agents are the session's (customAgents, session.agent.*)",
    ),
    (
        "agents.",
        "custom agents are the session's (customAgents, session.agent.*)",
    ),
    (
        "skills.",
        "skills are the session's (`skillDirectories`, `session.skills.*`); there is no server-wide skill configuration or discovery",
    ),
    ("skillProvider.", "turnstile has no skills"),
    ("session.plugins.", "turnstile has no plugins"),
    ("plugins.", "turnstile has no plugins"),
    ("session.extensions.", "turnstile has no extensions"),
    ("extensions.", "turnstile has no extensions"),
    ("extensionLaunchProvider.", "turnstile has no extensions"),
    (
        "registerExtensionLaunchProvider",
        "turnstile has no extensions",
    ),
    (
        "session.gitHubAuth.",
        "a session's account is its gitHubToken's (getStatus); the server's signed-in accounts are account.*'s",
    ),
    ("gitHubToken.", "turnstile does not sign in to GitHub"),
    (
        "providerToken.",
        "the server asks the client (providerToken.getToken); the client serves nothing here",
    ),
    (
        "session.history.",
        "compaction runs before a request, never in the background (compact, truncate, listRewindPoints, previewRewind, rewind, cancelBackgroundCompaction, abortManualCompaction and summarizeForHandoff are served)",
    ),
    (
        "session.queue.",
        "only pendingItems, removeMostRecent and clear are served: queued items are not edited, moved or steered by id, and the internal orchestration methods are the in-process host's",
    ),
    (
        "session.shell.",
        "only executeUserRequested and cancelUserRequested are served: a command the user runs is recorded and given to the model; commands streamed to the client by process id are not",
    ),
    (
        "session.schedule.",
        "turnstile has no /every or /after: only list and stop are served",
    ),
    ("session.remote.", "turnstile has no remote sessions"),
    (
        "sessions.",
        "of the server-level sessions API only fork, list, save, close, releaseLock, checkInUse, getSizes, findByPrefix, findByTaskId, getLastForContext, bulkDelete, pruneOld, enrichMetadata, open (resumeLast) and connect are served: use session.list, session.getMetadata, session.delete, session.resume",
    ),
    (
        "sessionFs.",
        "sessions live on the local file system; a client file system is not supported",
    ),
    (
        "session.metadata.",
        "of session.metadata only snapshot, isProcessing, recordContextChange, contextInfo and recomputeContextTokens are served; a session's working directory is the one it was opened in (its sandbox and path rules are built for it once)",
    ),
    (
        "session.usage.",
        "usage is recorded in the journal (assistant.usage events), not served",
    ),
    ("session.limitPrediction.", "turnstile predicts no limits"),
    (
        "session.visibility.",
        "turnstile has no session visibility setting",
    ),
    ("session.settings.", "settings come from the server's flags"),
    ("managedSettings.", "turnstile has no managed settings"),
    (
        "session.telemetry.",
        "turnstile sends no telemetry (setFeatureOverrides is served and changes nothing)",
    ),
    ("gitHubTelemetry.", "turnstile sends no telemetry"),
    ("session.debug.", "logs go to stderr or --log-dir"),
    (
        "session.sandbox.",
        "the sandbox is chosen when the server starts (`--no-sandbox`), not per session",
    ),
    (
        "session.contentExclusion.",
        "turnstile has no content exclusion policy",
    ),
    ("session.completions.", "turnstile offers no completions"),
    (
        "session.instructions.",
        "only getSources is served (the repository's instruction files the prompt carries)",
    ),
    (
        "instructions.",
        "turnstile loads no custom instruction files",
    ),
    ("session.lsp.", "turnstile has no LSP integration"),
    (
        "session.provider.",
        "the provider is given in session.create/resume (getEndpoint reads it back)",
    ),
    (
        "session.sendMessages",
        "send one prompt at a time with session.send",
    ),
    (
        "session.sendSystemNotification",
        "turnstile has no system notifications",
    ),
    ("session.interruptMainTurn", "use session.abort"),
    (
        "session.cancelAllBackgroundAgents",
        "turnstile runs no background agents",
    ),
    (
        "hooks.discover",
        "hooks are the client's (hooks: true) or the working directory's .github/hooks",
    ),
    ("hooks.", "only the server-to-client hooks.invoke is used"),
    (
        "models.getBuiltInCatalog",
        "models.list serves the server's default model",
    ),
    ("catalog.", "turnstile has no catalog"),
    ("secrets.", "turnstile filters no secrets from output"),
];

/// Why `method` is not served, when it is a known method of the SDK's schema family.
pub(crate) fn reason(method: &str) -> Option<&'static str> {
    REASONS
        .iter()
        .find(|(prefix, _)| method.starts_with(prefix))
        .map(|(_, why)| *why)
}
