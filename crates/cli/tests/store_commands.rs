//! Every command through the real binary with `--store nats://…` against a real
//! `nats-server` on a free loopback port: the reading commands on a scratch copy (`fsck`,
//! `history`, `report`, `replay --check`), `resume --last`, `export --from` and
//! `import --into` from a command line without `--store`, the refusals of `compact` and
//! `rewind`, and `checkpoint`: the folded state in the store's checkpoint entry, used by a
//! host without a copy when the entry's hash matches, ignored when it does not, and kept in
//! the state bucket when it is larger than one message.

use crate::common;

use serde_json::Value;
use turnstile_store_nats::local_server::LocalNats;
use turnstile_store_nats::{NatsConfig, NatsStore};

use common::store_env::{Env, file_cmd, lines, ok, view_alpha_then, with_gamma_prompt};

/// Runs one session of two turns on host `a` and returns its id.
fn stored_session(
    env: &Env,
    store: &str,
    model: &turnstile_scripted_model::ScriptedServer,
) -> String {
    let id = uuid::Uuid::new_v4().to_string();
    let out = env
        .loop_cmd(
            store,
            "a",
            model,
            &["run", "--session-id", &id, "what is in alpha.txt?"],
        )
        .output()
        .unwrap();
    assert_eq!(ok(&out).trim(), "It says alpha.");
    id
}

#[test]
fn the_reading_commands_resume_last_export_and_import_work_on_the_store() {
    let env = Env::new();
    let nats = env.nats();
    let store = nats.url();
    let model = env.model(view_alpha_then(&["It says alpha.", "Still alpha."]));
    let id = stored_session(&env, &store, &model);
    let copy = std::fs::read(env.host("a").join(&id).join("events.jsonl")).unwrap();

    let fsck = env
        .cmd(&store, "b", &["fsck", &id, "--json"])
        .output()
        .unwrap();
    let report: Value = serde_json::from_str(&ok(&fsck)).unwrap();
    assert_eq!(report["state"], "clean", "{report}");
    assert_eq!(report["events"], lines(&copy).len(), "{report}");
    assert_eq!(report["bytes"], copy.len(), "{report}");

    let history = ok(&env
        .cmd(&store, "b", &["history", &id, "--json"])
        .output()
        .unwrap());
    assert!(history.contains("what is in alpha.txt?"), "{history}");

    let page = env.dir.path().join("report.html");
    ok(&env
        .cmd(&store, "b", &["report", &id, "-o", page.to_str().unwrap()])
        .output()
        .unwrap());
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains("what is in alpha.txt?"),
        "the page shows the prompt"
    );

    // The stored journal as a fixture: its prompts again with its answers, compared.
    let replay = env
        .cmd(
            &store,
            "b",
            &[
                "replay",
                &id,
                "--check",
                "--cwd",
                env.work.path().to_str().unwrap(),
            ],
        )
        .output()
        .unwrap();
    ok(&replay);

    // Host c has no copy: `resume --last` takes the newest session of the store's index.
    let out = env
        .loop_cmd(&store, "c", &model, &["resume", "--last", "and now?"])
        .output()
        .unwrap();
    assert_eq!(ok(&out).trim(), "Still alpha.");
    let stored = env.export(&store, &id);
    assert!(
        stored.starts_with(&copy),
        "host c continued host a's journal"
    );
    assert_eq!(
        stored,
        std::fs::read(env.host("c").join(&id).join("events.jsonl")).unwrap()
    );

    // Without --store: export from the store, and from host c's state directory.
    let from_store = ok(&file_cmd(&env, "d", &["export", &id, "--from", &store])
        .output()
        .unwrap());
    assert_eq!(from_store.as_bytes(), stored.as_slice());
    let host_c = env.host("c");
    let from_files = ok(&file_cmd(
        &env,
        "d",
        &["export", &id, "--from", host_c.to_str().unwrap()],
    )
    .output()
    .unwrap());
    assert_eq!(from_files.as_bytes(), stored.as_slice());

    // Into a second store under another id, from a command line without --store.
    let other = env.nats_named("other");
    let file = env.dir.path().join("out.jsonl");
    std::fs::write(&file, &stored).unwrap();
    let new_id = uuid::Uuid::new_v4().to_string();
    ok(&file_cmd(
        &env,
        "d",
        &[
            "import",
            file.to_str().unwrap(),
            "--into",
            &other.url(),
            "--session-id",
            &new_id,
        ],
    )
    .output()
    .unwrap());
    assert_eq!(env.export(&other.url(), &new_id), stored);
    let listed: Value = serde_json::from_str(&ok(&env
        .cmd(&other.url(), "d", &["sessions", "--json"])
        .output()
        .unwrap()))
    .unwrap();
    assert_eq!(listed[0]["id"], new_id.as_str(), "{listed}");
}

#[test]
fn compact_and_rewind_refuse_the_store_and_name_the_flag() {
    let env = Env::new();
    let nats = env.nats();
    let store = nats.url();
    let model = env.model(view_alpha_then(&["It says alpha."]));
    let id = stored_session(&env, &store, &model);
    let before = env.export(&store, &id);
    for args in [
        vec!["compact", id.as_str()],
        vec!["rewind", id.as_str(), "--to", "1"],
    ] {
        let out = env.loop_cmd(&store, "a", &model, &args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(&format!("turnstile {}", args[0])) && stderr.contains("--store"),
            "{stderr}"
        );
    }
    assert_eq!(env.export(&store, &id), before, "nothing written");
}

/// The last request the model received, as text.
fn last_request(model: &turnstile_scripted_model::ScriptedServer) -> String {
    model.recorded().last().unwrap().body.to_string()
}

#[test]
fn a_host_without_a_copy_resumes_from_the_stored_checkpoint_when_its_hash_matches() {
    let env = Env::new();
    let nats = env.nats();
    let store = nats.url();
    let model = env.model(view_alpha_then(&["It says alpha.", "From c.", "From d."]));
    let id = stored_session(&env, &store, &model);
    let session: uuid::Uuid = id.parse().unwrap();

    let written = ok(&env
        .cmd(&store, "b", &["checkpoint", &id, "--json"])
        .output()
        .unwrap());
    let written: Value = serde_json::from_str(&written).unwrap();
    let exported = env.export(&store, &id);
    assert_eq!(written["bytes"], exported.len(), "{written}");
    assert_eq!(written["events"], lines(&exported).len(), "{written}");
    ok(&env
        .cmd(&store, "b", &["checkpoint", &id, "--verify"])
        .output()
        .unwrap());

    let nats_store = |env: &Env| {
        env.rt
            .block_on(NatsStore::open(NatsConfig::new(store.clone())))
            .unwrap()
    };
    let handle = nats_store(&env);
    let entry = env
        .rt
        .block_on(handle.checkpoint(session))
        .unwrap()
        .unwrap();
    assert!(entry.folded.is_some(), "the entry holds the folded state");

    // The folded state is what a copy-less host starts from: one where the prompt says
    // gamma.txt (the journal still says alpha.txt) shows in the next request's conversation.
    let changed = with_gamma_prompt(&entry);
    env.rt
        .block_on(handle.put_checkpoint(session, &changed))
        .unwrap();
    resume_on_c_from_gamma(&env, &store, &model, &id);

    // The same state under a hash that is not the journal's prefix: a full fold instead, the
    // conversation as the journal has it.
    let mut mismatched = env
        .rt
        .block_on(handle.checkpoint(session))
        .unwrap()
        .unwrap();
    mismatched.folded = changed.folded.clone();
    mismatched.sha256 = "0".repeat(64);
    env.rt
        .block_on(handle.put_checkpoint(session, &mismatched))
        .unwrap();
    let verify = env
        .cmd(&store, "b", &["checkpoint", &id, "--verify"])
        .output()
        .unwrap();
    assert_eq!(
        verify.status.code(),
        Some(1),
        "the verify sees the mismatch"
    );
    let out = env
        .loop_cmd(&store, "d", &model, &["resume", &id, "and then?"])
        .output()
        .unwrap();
    assert_eq!(ok(&out).trim(), "From d.");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("does not match its journal"), "{stderr}");
    let request = last_request(&model);
    assert!(
        request.contains("alpha.txt?") && !request.contains("gamma.txt?"),
        "{request}"
    );
}

/// The largest message of the server in the next tests: far below NATS's 1 MB default, so a
/// short session's folded state outgrows it while every journal line (the system prompt's
/// is the longest, about 19 KB) still fits.
const SMALL_MAX_PAYLOAD: usize = 32 << 10;

#[test]
fn a_folded_state_larger_than_a_message_is_kept_in_the_state_bucket_and_adopted() {
    let env = Env::new();
    let nats =
        LocalNats::start_with_max_payload(&env.dir.path().join("nats"), SMALL_MAX_PAYLOAD).unwrap();
    let store = nats.url();
    let model = env.model(view_alpha_then(&["It says alpha.", "Noted.", "From c."]));
    // Two prompts of 12 KB: each line is under the server's limit, the state is not.
    let padding = "so that the prompt is long ".repeat(450);
    let first = format!("what is in alpha.txt? {padding}");
    let id = uuid::Uuid::new_v4().to_string();
    let out = env
        .loop_cmd(&store, "a", &model, &["run", "--session-id", &id, &first])
        .output()
        .unwrap();
    assert_eq!(ok(&out).trim(), "It says alpha.");
    let second = format!("remember this. {padding}");
    let out = env
        .loop_cmd(&store, "a", &model, &["resume", &id, &second])
        .output()
        .unwrap();
    assert_eq!(ok(&out).trim(), "Noted.");
    let exported = env.export(&store, &id);
    assert!(
        exported
            .split(|&b| b == b'\n')
            .all(|line| line.len() < SMALL_MAX_PAYLOAD),
        "every journal line fits in one message"
    );

    let written = ok(&env
        .cmd(&store, "b", &["checkpoint", &id, "--json"])
        .output()
        .unwrap());
    let written: Value = serde_json::from_str(&written).unwrap();
    assert_eq!(written["stored"], true, "{written}");
    ok(&env
        .cmd(&store, "b", &["checkpoint", &id, "--verify"])
        .output()
        .unwrap());

    let session: uuid::Uuid = id.parse().unwrap();
    let handle = env
        .rt
        .block_on(NatsStore::open(NatsConfig::new(store.clone())))
        .unwrap();
    let raw = env
        .rt
        .block_on(handle.checkpoint_entry(session))
        .unwrap()
        .unwrap();
    let object = raw.folded_object.expect("the state is in the state bucket");
    assert!(object.bytes > SMALL_MAX_PAYLOAD as u64, "{object:?}");
    let entry = env
        .rt
        .block_on(handle.checkpoint(session))
        .unwrap()
        .unwrap();
    assert_eq!(entry.bytes, exported.len() as u64);

    // Host c, without a copy, starts from the kept state: one where the first prompt asks
    // about gamma.txt (the journal still says alpha.txt) shows in its request.
    assert!(
        env.rt
            .block_on(handle.put_checkpoint(session, &with_gamma_prompt(&entry)))
            .unwrap()
    );
    resume_on_c_from_gamma(&env, &store, &model, &id);
}

/// Host c, without a copy, resumes `id`; its request must carry the gamma state the store
/// holds, not the journal's conversation.
fn resume_on_c_from_gamma(
    env: &Env,
    store: &str,
    model: &turnstile_scripted_model::ScriptedServer,
    id: &str,
) {
    let out = env
        .loop_cmd(store, "c", model, &["resume", id, "and now?"])
        .output()
        .unwrap();
    assert_eq!(ok(&out).trim(), "From c.");
    let request = last_request(model);
    assert!(
        request.contains("gamma.txt?") && !request.contains("alpha.txt?\""),
        "{request}"
    );
}

#[test]
fn a_line_larger_than_a_message_stops_the_session_at_once_naming_the_limit() {
    let env = Env::new();
    let nats =
        LocalNats::start_with_max_payload(&env.dir.path().join("nats"), SMALL_MAX_PAYLOAD).unwrap();
    let store = nats.url();
    let model = env.model(view_alpha_then(&["It says alpha."]));
    let prompt = format!(
        "what is in alpha.txt? {}",
        "far too long for one message ".repeat(1300)
    );
    let out = env
        .loop_cmd(&store, "a", &model, &["run", &prompt])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "over the {SMALL_MAX_PAYLOAD} bytes a message may have on this server (its max_payload)"
        )) && stderr.contains("raise max_payload"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("lease lapsed"),
        "not retried until the lease ran out: {stderr}"
    );
}
