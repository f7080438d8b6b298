//! Journals written before `session.start` carried `contextTier`/`alreadyInUse`/
//! `remoteSteerable`, `user.message` its `attachments` and the wrapped prompt, `assistant.message`
//! its `outputTokens`, `tool.execution_start` its `shellToolInfo` and `permission.requested` its
//! `promptRequest`: they fold and resume as before.

use turnstile_journal::payload::SessionResume;
use turnstile_journal::{Event, Timestamp};
use turnstile_replay::{Message, fold, resume_plan};

/// A session cut by a crash while `bash` ran, as an earlier build wrote it.
const OLD_JOURNAL: &[&str] = &[
    r#"{"type":"session.start","data":{"sessionId":"5e55a0e1-0000-4000-8000-000000000003","version":1,"producer":"turnstile","copilotVersion":"0.1.0","startTime":"2026-11-29T16:33:54.674Z","selectedModel":"gpt-4.1","context":{"cwd":"/tmp/turnstile-record/crash-resume/work"}},"id":"1aa662b4-8046-458e-a8bd-b33c277ec5a8","timestamp":"2026-11-29T16:33:54.674Z","parentId":null}"#,
    r#"{"type":"user.message","data":{"content":"Run the build.","transformedContent":"Run the build.","messageId":"2c02e559-c661-4861-8ae7-f4a2c5944006","interactionId":"9f9c5c56-e744-436f-a1d5-a2bdc0ee5787"},"id":"c5e99df3-0e62-4d36-82b7-4e5f83d30def","timestamp":"2026-11-29T16:33:54.674Z","parentId":"1aa662b4-8046-458e-a8bd-b33c277ec5a8"}"#,
    r#"{"type":"assistant.turn_start","data":{"turnId":"0","interactionId":"9f9c5c56-e744-436f-a1d5-a2bdc0ee5787"},"id":"d3291931-15e6-47e6-a783-8bc68da8ac11","timestamp":"2026-11-29T16:33:54.674Z","parentId":"c5e99df3-0e62-4d36-82b7-4e5f83d30def"}"#,
    r#"{"type":"assistant.message","data":{"messageId":"845d875a-d128-49ce-a0de-eb3f5f73d903","originatingMessageId":"2c02e559-c661-4861-8ae7-f4a2c5944006","model":"gpt-4.1","content":"","toolRequests":[{"toolCallId":"call_cr_01","name":"bash","arguments":{"command":"bash build.sh","description":"Run the full build"},"type":"function","intentionSummary":"Run the full build"}],"interactionId":"9f9c5c56-e744-436f-a1d5-a2bdc0ee5787","turnId":"0","apiCallId":"chatcmpl-1"},"id":"51f7e097-463b-4683-90e9-0d3e31ddb4c0","timestamp":"2026-11-29T16:33:54.675Z","parentId":"d3291931-15e6-47e6-a783-8bc68da8ac11"}"#,
    r#"{"type":"tool.execution_start","data":{"toolCallId":"call_cr_01","toolName":"bash","arguments":{"command":"bash build.sh","description":"Run the full build"},"turnId":"0","model":"gpt-4.1"},"id":"26717b32-9ddd-4c68-ad00-f983bfc96af8","timestamp":"2026-11-29T16:33:54.675Z","parentId":"51f7e097-463b-4683-90e9-0d3e31ddb4c0"}"#,
    r#"{"type":"permission.requested","data":{"requestId":"97bd56fa-31ae-4db0-bcc0-7ecd7b3b9ffc","permissionRequest":{"kind":"shell","fullCommandText":"bash build.sh","intention":"Run the full build","commands":[{"identifier":"bash","readOnly":false}],"commandSegments":[{"identifier":"bash","fullCommandText":"bash build.sh"}],"possiblePaths":[],"possibleUrls":[],"hasWriteFileRedirection":false,"canOfferSessionApproval":true,"toolCallId":"call_cr_01"},"agentMode":"interactive"},"id":"4caad1d4-dc0f-47bc-9183-cc3c84c19d7b","timestamp":"2026-11-29T16:33:54.675Z","parentId":"26717b32-9ddd-4c68-ad00-f983bfc96af8"}"#,
    r#"{"type":"permission.completed","data":{"requestId":"97bd56fa-31ae-4db0-bcc0-7ecd7b3b9ffc","toolCallId":"call_cr_01","result":{"kind":"approved"},"decisionSource":"host_policy"},"id":"d9d8c3d4-1480-4293-acf1-d22fe68082d3","timestamp":"2026-11-29T16:33:54.675Z","parentId":"4caad1d4-dc0f-47bc-9183-cc3c84c19d7b"}"#,
];

#[test]
fn a_journal_without_the_newer_fields_folds_and_resumes() {
    let events: Vec<Event> = OLD_JOURNAL
        .iter()
        .map(|l| Event::from_line(l.as_bytes()).expect("an old line still parses"))
        .collect();
    let state = fold(events.iter());
    // The prompt the model read is the recorded text, unwrapped as it was sent then.
    let user = state.conversation.iter().find_map(|m| match m {
        Message::User {
            content,
            attachments,
            ..
        } => Some((content.clone(), attachments.len())),
        _ => None,
    });
    assert_eq!(user, Some(("Run the build.".to_owned(), 0)));
    assert!(state.was_active(), "the bash call never ended");

    let plan = resume_plan(&state, Timestamp::from_millis(1_796_000_000_000));
    assert_eq!(plan.closed_tool_calls, ["call_cr_01"]);
    let resume: SessionResume = plan.events[0].payload().expect("a session.resume first");
    assert_eq!(resume.event_count, OLD_JOURNAL.len() as u64);
    assert_eq!(resume.selected_model.as_deref(), Some("gpt-4.1"));
    // The resume is written in today's shape, whatever the journal before it lacks.
    assert_eq!(resume.context_tier, Some(None));
    assert_eq!(resume.already_in_use, Some(false));
    assert_eq!(resume.remote_steerable, Some(false));

    let resumed = fold(events.iter().chain(plan.events.iter()));
    assert!(resumed.open_work.tool_calls_in_order().is_empty());
    let answered = resumed
        .conversation
        .iter()
        .any(|m| matches!(m, Message::Tool { tool_call_id, .. } if tool_call_id == "call_cr_01"));
    assert!(
        answered,
        "the interrupted call has its result for the model"
    );
}
