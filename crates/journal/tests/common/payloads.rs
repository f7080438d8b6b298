//! One realistic payload of each typed event, every field as the runtime fills it: shared by
//! the round-trip test and the schema test, so that a new payload is written once.

use serde_json::{Map, Number, Value, json};
use turnstile_journal::payload::*;

fn obj(v: Value) -> Map<String, Value> {
    v.as_object().cloned().expect("an object")
}

/// One realistic payload of each typed event, in the order a session would write them.
pub fn realistic() -> Vec<TypedEvent> {
    let session = "46c8e8df-96f9-41f4-baec-fd5ed95e84d7".to_string();
    let interaction = "208952f0-0e83-45e0-a3f8-f2e8fa46cfdf".to_string();
    let message = "ed00bb00-a35a-4b36-99fd-77b33d09208f".to_string();
    let call = "call_e53baaf38aac429c".to_string();
    let cwd = "/home/dev/project".to_string();
    let context = WorkingDirectoryContext {
        cwd: cwd.clone(),
        git_root: Some(cwd.clone()),
        repository: Some("octo/project".into()),
        host_type: Some("github".into()),
        repository_host: Some("github.com".into()),
        branch: Some("main".into()),
        head_commit: Some("0123456789abcdef0123456789abcdef01234567".into()),
        base_commit: Some("0123456789abcdef0123456789abcdef01234567".into()),
        pending_git_context: None,
    };
    let metric = json!({
        "requests": {"count": 4, "cost": 0},
        "usage": {"inputTokens": 4010, "outputTokens": 80, "cacheReadTokens": 0, "cacheWriteTokens": 0, "reasoningTokens": 0},
        "totalNanoAiu": 0
    });

    vec![
        SessionStart {
            session_id: session.clone(),
            version: 1,
            producer: "copilot-agent".into(),
            copilot_version: "0.1.0".into(),
            start_time: "2026-11-29T14:37:32.395Z".into(),
            selected_model: Some("gpt-4.1".into()),
            reasoning_effort: Some("medium".into()),
            reasoning_summary: Some("concise".into()),
            verbosity: Some("medium".into()),
            context_tier: Some(None),
            auto_tier: None,
            session_limits: Some(SessionLimits { max_ai_credits: Some(Number::from(100)) }),
            context: Some(context.clone()),
            github_mcp_tool_config: Some(GitHubMcpToolConfig {
                enable_all_tools: Some(false),
                additional_toolsets: Some(vec!["actions".into()]),
                additional_tools: Some(vec![]),
                enable_insiders_mode: Some(false),
            }),
            remote_steerable: Some(false),
            already_in_use: Some(false),
            detached_from_spawning_parent_session_id: None,
        }
        .into(),
        SystemMessage {
            role: "system".into(),
            content: "You are an agent that works in the user's terminal.".into(),
            name: None,
            interaction_id: Some(interaction.clone()),
            metadata: Some(SystemMessageMetadata {
                prompt_version: Some("1".into()),
                variables: Some(obj(json!({"cwd": cwd}))),
            }),
        }
        .into(),
        UserMessage {
            content: "List the .txt files".into(),
            transformed_content: Some(
                "<current_datetime>2026-11-29T14:37:32.499+00:00</current_datetime>\n\nList the .txt files".into(),
            ),
            source: None,
            message_id: Some("621ed9cb-e2c8-468c-811c-e199da978daf".into()),
            attachments: Some(vec![json!({
                "type": "file", "path": "/home/dev/project/alpha.txt", "displayName": "alpha.txt"
            })]),
            supported_native_document_mime_types: Some(vec![]),
            native_document_path_fallback_paths: None,
            agent_mode: Some("autopilot".into()),
            is_autopilot_continuation: None,
            delivery: Some("idle".into()),
            interaction_id: Some(interaction.clone()),
            turn_id: Some("0".into()),
            parent_agent_task_id: Some("de85d309-5e67-453f-9cac-da17bf95f877".into()),
        }
        .into(),
        AssistantTurnStart {
            turn_id: "0".into(),
            model: Some("gpt-4.1".into()),
            interaction_id: Some(interaction.clone()),
        }
        .into(),
        AssistantTurnRetry {
            turn_id: "0".into(),
            model: Some("gpt-4.1".into()),
            reason: Some("stream_interrupted".into()),
        }
        .into(),
        AssistantMessageDelta {
            message_id: message.clone(),
            delta_content: "Let me look.".into(),
            parent_tool_call_id: None,
        }
        .into(),
        AssistantReasoning {
            reasoning_id: "rs_1".into(),
            content: "The user wants the text files.".into(),
            rte: Some(false),
        }
        .into(),
        AssistantUsage {
            model: "gpt-4.1".into(),
            input_tokens: Some(1001),
            output_tokens: Some(20),
            cache_read_tokens: Some(0),
            cache_write_tokens: Some(0),
            reasoning_tokens: Some(0),
            cost: Some(Number::from(0)),
            duration: Some(14),
            time_to_first_token_ms: Number::from_f64(13.216071000000001),
            output_ttft_ms: Number::from_f64(13.216264),
            inter_token_latency_ms: Number::from_f64(0.14219025),
            initiator: Some("user".into()),
            interaction_type: Some("conversation-agent".into()),
            is_byok: Some(true),
            is_auto: Some(false),
            max_prompt_tokens: Some(128_000),
            transport: Some("http".into()),
            api_call_id: Some("chatcmpl-012be11c9cd3".into()),
            rte: Some(false),
            api_endpoint: Some("/chat/completions".into()),
            quota_snapshots: Some(Map::new()),
            copilot_usage: Some(json!({"totalNanoAiu": 0})),
            available_tool_count: Some(14),
            tool_token_count: Some(3701),
            frontier_source: Some("estimated".into()),
            cache_details_reported: Some(false),
            num_tool_calls: Some(1),
            tool_counts: Some(obj(json!({"glob": 1}))),
            finish_reason: Some("tool_calls".into()),
            content_filter_triggered: Some(false),
            ..Default::default()
        }
        .into(),
        AssistantMessage {
            message_id: message.clone(),
            originating_message_id: Some("621ed9cb-e2c8-468c-811c-e199da978daf".into()),
            model: Some("gpt-4.1".into()),
            content: "Let me look.".into(),
            tool_requests: Some(vec![ToolRequest {
                tool_call_id: call.clone(),
                name: "glob".into(),
                arguments: Some(json!({"pattern": "*.txt"})),
                kind: Some("function".into()),
                intention_summary: Some(Some("*.txt".into())),
                tool_title: Some("Find files".into()),
                ..Default::default()
            }]),
            output_tokens: Some(20),
            interaction_id: Some(interaction.clone()),
            turn_id: Some("0".into()),
            rte: Some(false),
            api_call_id: Some("chatcmpl-012be11c9cd3".into()),
            ..Default::default()
        }
        .into(),
        ToolExecutionStart {
            tool_call_id: call.clone(),
            tool_name: "glob".into(),
            arguments: Some(json!({"pattern": "*.txt"})),
            turn_id: Some("0".into()),
            model: Some("gpt-4.1".into()),
            ..Default::default()
        }
        .into(),
        PermissionRequested {
            request_id: "9a29205b-675e-4a65-9bf4-198c2f1a5fdb".into(),
            permission_request: json!({
                "kind": "read", "toolCallId": call, "intention": "Search for files matching pattern in: /home/dev/project", "path": cwd
            }),
            prompt_request: Some(json!({
                "kind": "read", "intention": "Search for files matching pattern in: /home/dev/project", "path": cwd, "toolCallId": call
            })),
            agent_mode: Some("autopilot".into()),
            ..Default::default()
        }
        .into(),
        PermissionCompleted {
            request_id: "9a29205b-675e-4a65-9bf4-198c2f1a5fdb".into(),
            tool_call_id: Some(call.clone()),
            result: json!({"kind": "approved"}),
            decision_source: Some("host_policy".into()),
        }
        .into(),
        HookStart {
            hook_invocation_id: "hk_1".into(),
            hook_type: "preToolUse".into(),
            input: Some(json!({"toolName": "glob", "toolArgs": {"pattern": "*.txt"}})),
            parent_tool_call_id: None,
        }
        .into(),
        HookEnd {
            hook_invocation_id: "hk_1".into(),
            hook_type: "preToolUse".into(),
            output: Some(json!({"permissionDecision": "allow"})),
            success: true,
            error: None,
            parent_tool_call_id: None,
        }
        .into(),
        ToolUserRequested {
            tool_call_id: "user_shell_1".into(),
            tool_name: "local_shell".into(),
            arguments: Some(json!({"command": "echo hi", "description": "Execute shell command: echo hi"})),
        }
        .into(),
        ToolExecutionProgress { tool_call_id: call.clone(), progress_message: "Searching...".into() }.into(),
        ToolExecutionPartialResult { tool_call_id: call.clone(), partial_output: "./alpha.txt\n".into() }
            .into(),
        ToolExecutionComplete {
            tool_call_id: call.clone(),
            model: Some("gpt-4.1".into()),
            interaction_id: Some(interaction.clone()),
            turn_id: Some("0".into()),
            rte: Some(false),
            success: true,
            result: Some(ToolResult {
                content: "./alpha.txt\n./gamma.txt\n./beta.txt".into(),
                detailed_content: Some("./alpha.txt\n./gamma.txt\n./beta.txt".into()),
                contents: Some(vec![json!({"type": "text", "text": "./alpha.txt"})]),
                ..Default::default()
            }),
            tool_telemetry: Some(obj(json!({
                "properties": {"files_found": "true"}, "restrictedProperties": {}, "metrics": {"file_count": 3.0}
            }))),
            sandboxed: Some(false),
            ..Default::default()
        }
        .into(),
        ToolExecutionComplete {
            tool_call_id: "call_2".into(),
            success: false,
            error: Some(ToolError {
                message: "Permission denied and could not request permission from user".into(),
                code: Some("denied".into()),
                remediation: Some("review_sandbox_policy".into()),
            }),
            shell_execution: Some(ShellExecution { exit_code: 1 }),
            ..Default::default()
        }
        .into(),
        ExternalToolRequested {
            request_id: "ext_1".into(),
            session_id: session.clone(),
            tool_call_id: "call_3".into(),
            tool_name: "open_browser".into(),
            provider_id: Some(None),
            arguments: Some(json!({"url": "https://example.com"})),
            working_directory: Some(cwd.clone()),
            traceparent: Some("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01".into()),
            tracestate: None,
        }
        .into(),
        ExternalToolCompleted { request_id: "ext_1".into() }.into(),
        SubagentStarted {
            tool_call_id: "call_3".into(),
            agent_name: "explore".into(),
            agent_display_name: "Explore Agent".into(),
            agent_description: "Explores the code base and answers questions".into(),
            model: Some("gpt-4.1".into()),
            ..Default::default()
        }
        .into(),
        SubagentCompleted {
            tool_call_id: "call_3".into(),
            agent_name: "explore".into(),
            agent_display_name: "Explore Agent".into(),
            model: Some("gpt-4.1".into()),
            total_tool_calls: Some(1),
            total_tokens: Some(8955),
            duration_ms: Some(191),
            ..Default::default()
        }
        .into(),
        SubagentFailed {
            tool_call_id: "call_4".into(),
            agent_name: "explore".into(),
            agent_display_name: "Explore Agent".into(),
            error: "the model call failed".into(),
            model: Some("gpt-4.1".into()),
            total_tool_calls: Some(0),
            total_tokens: Some(0),
            duration_ms: Some(3),
            ..Default::default()
        }
        .into(),
        AssistantTurnEnd { turn_id: "0".into(), model: Some("gpt-4.1".into()) }.into(),
        SessionError {
            error_type: "rate_limit".into(),
            error_code: Some("rate_limited".into()),
            eligible_for_auto_switch: Some(false),
            message: "Sorry, you have been rate-limited.".into(),
            remediation: None,
            stack: None,
            status_code: Some(429),
            provider_call_id: Some("F00D:1234".into()),
            service_request_id: None,
            url: None,
        }
        .into(),
        Abort { reason: "user_initiated".into() }.into(),
        SessionIdle { aborted: Some(true), mode: Some("autopilot".into()) }.into(),
        SessionTaskComplete {
            summary: Some("Listed the 3 text files.".into()),
            success: Some(true),
            outcome: Some("completed".into()),
            reason: None,
            objective_id: None,
        }
        .into(),
        SessionShutdown {
            shutdown_type: "routine".into(),
            error_reason: None,
            total_premium_requests: Some(Number::from(0)),
            total_nano_aiu: Some(Number::from(0)),
            token_details: Some(obj(json!({"input": {"tokenCount": 4010}}))),
            total_api_duration_ms: 25,
            session_start_time: 1_795_963_052_395,
            events_file_size_bytes: Some(35_857),
            code_changes: CodeChanges { lines_added: 3, lines_removed: 1, files_modified: vec![cwd.clone() + "/a.txt"] },
            model_metrics: obj(json!({"gpt-4.1": metric})),
            agent_metrics: Some(obj(json!({
                "main": {"totalApiDurationMs": 25, "totalNanoAiu": 0.0, "modelMetrics": {"gpt-4.1": metric}}
            }))),
            current_model: Some("gpt-4.1".into()),
            current_tokens: Some(9277),
            system_tokens: Some(4996),
            conversation_tokens: Some(390),
            tool_definitions_tokens: Some(3888),
        }
        .into(),
        SessionResume {
            resume_time: "2026-11-29T14:34:49.239Z".into(),
            selected_model: Some("gpt-4.1".into()),
            context_tier: Some(Some("default".into())),
            session_limits: Some(None),
            context: Some(WorkingDirectoryContext { cwd: cwd.clone(), ..Default::default() }),
            remote_steerable: Some(false),
            events_file_size_bytes: Some(29_240),
            event_count: 21,
            already_in_use: Some(false),
            session_was_active: Some(false),
            continue_pending_work: Some(false),
            ..Default::default()
        }
        .into(),
        SessionUsageInfo {
            token_limit: 128_000,
            current_tokens: 10_194,
            messages_length: 2,
            system_tokens: Some(4952),
            conversation_tokens: Some(60),
            tool_definitions_tokens: Some(5182),
            is_initial: Some(true),
        }
        .into(),
        SessionTitleChanged { title: "Fix the failing test".into() }.into(),
        SessionToolsUpdated { model: "gpt-4.1".into() }.into(),
        McpServerStatusChanged {
            server_name: "files".into(),
            status: "failed".into(),
            error: Some("failed to start MCP server process \"x\": not found".into()),
        }
        .into(),
        McpToolsListChanged {
            server_name: "files".into(),
        }
        .into(),
        McpServersLoaded {
            servers: vec![McpServerSummary {
                name: "files".into(),
                status: "connected".into(),
                transport: Some("stdio".into()),
                ..Default::default()
            }],
        }
        .into(),
        SessionSkillsLoaded {
            skills: vec![SkillSummary {
                name: "demo".into(),
                command_name: Some("demo".into()),
                description: "A demo skill".into(),
                source: "custom".into(),
                user_invocable: true,
                enabled: true,
                path: Some("/skills/demo/SKILL.md".into()),
                argument_hint: None,
            }],
        }
        .into(),
        SkillInvoked {
            name: "demo".into(),
            path: "/skills/demo/SKILL.md".into(),
            content: "Say DEMO when asked.\n".into(),
            source: Some("custom".into()),
            description: Some("A demo skill".into()),
            trigger: Some("agent-invoked".into()),
            model: Some("gpt-4.1".into()),
            ..Default::default()
        }
        .into(),
        SystemNotification {
            content: "<system_notification>\nShell command \"Wait then fail\" (shellId: 0) has exited with exit code 4. Use read_bash with shellId \"0\" to retrieve the output.\n</system_notification>".into(),
            kind: serde_json::json!({"type": "shell_completed", "shellId": "0", "exitCode": 4, "description": "Wait then fail"}),
        }
        .into(),
        PendingMessagesModified {}.into(),
        SessionTodosChanged {}.into(),
        SessionBackgroundTasksChanged {}.into(),
        SessionManagedSettingsResolved::none().into(),
        ModelCallStart { turn_id: "0".into(), model: Some("gpt-4.1".into()), ..Default::default() }.into(),
        AssistantIdle { aborted: None }.into(),
        AssistantMessageStart { message_id: "m1".into(), phase: None }.into(),
        AssistantStreamingDelta { total_response_size_bytes: 4 }.into(),
        AssistantToolCallDelta {
            tool_call_id: "call_1".into(),
            tool_name: Some("bash".into()),
            tool_type: Some("function".into()),
            input_delta: "{}".into(),
        }
        .into(),
        SessionModelChange {
            context_tier: Some(None),
            new_model: "gpt-5".into(),
            previous_model: Some("gpt-4.1".into()),
            reasoning_effort: Some(Some("high".into())),
            ..Default::default()
        }
        .into(),
        SessionBinaryAsset {
            asset_id: "sha256:00023965829ad187893d5eb1aedff72a9e9e179f2a867e15f90c19b32064eb5a".into(),
            asset_type: "image".into(),
            mime_type: "image/png".into(),
            byte_length: 67,
            data: "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgAAACAAAB4iG8MwAAAABJRU5ErkJggg==".into(),
            ..Default::default()
        }
        .into(),
    ]
}
