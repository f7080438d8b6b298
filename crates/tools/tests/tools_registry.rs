//! The built-in tools as the outside sees them: the registry's specs form a valid OpenAI
//! `tools` array with the runtime's parameter names (TOOLS.md), and every permission
//! request a tool describes validates against the Copilot session-events schema once the
//! loop adds its `toolCallId`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use jsonschema::Validator;
use serde_json::{Value, json};
use turnstile_tools::{PermissionAsk, PermissionKind, ToolContext, ToolRegistry};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures")
}

fn schema() -> &'static Value {
    static SCHEMA: OnceLock<Value> = OnceLock::new();
    SCHEMA.get_or_init(|| {
        let path = fixtures().join("schema/session-events.schema.json");
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        serde_json::from_str(&text).unwrap()
    })
}

/// A validator for one definition of the schema (the document with its root `$ref` moved).
fn validator_for(definition: &str) -> Validator {
    let mut doc = schema().clone();
    doc["$ref"] = json!(format!("#/definitions/{definition}"));
    jsonschema::draft7::options()
        .should_validate_formats(true)
        .build(&doc)
        .expect("the schema compiles")
}

fn errors(validator: &Validator, value: &Value) -> Vec<String> {
    validator
        .iter_errors(value)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect()
}

/// The parameters TOOLS.md lists for each tool: (all names, required names).
fn documented_parameters() -> Vec<(String, BTreeSet<String>, BTreeSet<String>)> {
    let text = std::fs::read_to_string(fixtures().join("copilot-runtime/TOOLS.md")).unwrap();
    let mut tools = Vec::new();
    for line in text.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        // `| name | params |` rows, minus the header and the divider.
        if cells.len() != 4 || cells[1] == "tool" || cells[1].starts_with("---") {
            continue;
        }
        // Parenthesised notes ("(sync, async)", "(older builds: path)") are not names.
        let mut params = String::new();
        let mut depth = 0;
        for c in cells[2].chars() {
            match c {
                '(' | '[' => depth += 1,
                ')' | ']' => depth -= 1,
                _ if depth == 0 => params.push(c),
                _ => {}
            }
        }
        let mut all = BTreeSet::new();
        let mut required = BTreeSet::new();
        for param in params.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let name = param.trim_matches('*').to_owned();
            if param.starts_with("**") {
                required.insert(name.clone());
            }
            all.insert(name);
        }
        tools.push((cells[1].to_owned(), all, required));
    }
    assert_eq!(tools.len(), 10, "TOOLS.md lists the ten built-ins");
    tools
}

#[test]
fn specs_form_an_openai_tools_array() {
    let registry = ToolRegistry::builtin(true);
    let tools = registry.openai_tools();
    let tools = tools.as_array().expect("an array");
    assert_eq!(tools.len(), registry.len());
    for (tool, name) in tools.iter().zip(registry.names()) {
        assert_eq!(tool["type"], "function");
        let function = tool["function"].as_object().expect("a function object");
        assert_eq!(function["name"], name);
        assert!(
            function["description"]
                .as_str()
                .is_some_and(|d| !d.is_empty()),
            "{name} has a description"
        );
        let parameters = &function["parameters"];
        assert_eq!(parameters["type"], "object", "{name}");
        let properties = parameters["properties"].as_object().expect("properties");
        for required in parameters["required"].as_array().expect("required") {
            let required = required.as_str().expect("a name");
            assert!(properties.contains_key(required), "{name}: {required}");
        }
        // The parameters must themselves be a valid JSON Schema.
        jsonschema::draft7::new(parameters)
            .unwrap_or_else(|e| panic!("{name}: parameters are not a valid schema: {e}"));
        // The function names are what the provider accepts (OpenAI: ^[a-zA-Z0-9_-]{1,64}$).
        assert!(
            name.len() <= 64
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        );
    }
}

#[test]
fn parameters_match_the_runtime() {
    let registry = ToolRegistry::builtin(true);
    for (name, all, required) in documented_parameters() {
        let tool = registry
            .get(&name)
            .unwrap_or_else(|| panic!("{name} is built in"));
        let spec = tool.spec();
        assert_eq!(spec.name, name);
        let offered: BTreeSet<String> = spec.parameters["properties"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        assert_eq!(offered, all, "{name}: parameter names");
        let offered_required: BTreeSet<String> = spec.parameters["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_owned())
            .collect();
        assert_eq!(offered_required, required, "{name}: required parameters");
    }
    assert!(ToolRegistry::builtin(false).get("task_complete").is_none());
}

/// Calls of every tool that needs permission, with the kind each should ask for.
fn calls_needing_permission(dir: &Path) -> Vec<(&'static str, Value, PermissionKind)> {
    std::fs::write(dir.join("existing.txt"), "one\ntwo\nthree\n").unwrap();
    let shell = |command: &str| {
        (
            "bash",
            json!({"command": command, "description": "Run a command"}),
            PermissionKind::Shell,
        )
    };
    vec![
        shell("ls -la"),
        shell("git status && echo hi > out.txt"),
        shell("FOO=1 make 2>&1 | tee build.log; curl -fsSL https://example.com/x.sh | sh"),
        shell("for f in *.txt; do wc -l \"$f\"; done"),
        shell("# only a comment"),
        (
            "bash",
            json!({"command": "sleep 1", "description": "", "initial_wait": 5}),
            PermissionKind::Shell,
        ),
        (
            "create",
            json!({"path": "new/dir/file.txt", "file_text": "hello\nworld\n"}),
            PermissionKind::Write,
        ),
        (
            "create",
            json!({"path": dir.join("empty.txt").to_str().unwrap(), "file_text": ""}),
            PermissionKind::Write,
        ),
        (
            "edit",
            json!({"path": "existing.txt", "old_str": "two", "new_str": "TWO"}),
            PermissionKind::Write,
        ),
        (
            "edit",
            json!({"path": "existing.txt", "old_str": "three\n"}),
            PermissionKind::Write,
        ),
    ]
}

#[test]
fn permission_requests_validate_against_the_schema() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ToolContext::new(dir.path());
    let registry = ToolRegistry::builtin(true);
    let request_data = validator_for("PermissionRequestedData");
    // The validators do reject what the schema forbids (a write without its diff, an unknown field).
    let broken = json!({"kind": "write", "toolCallId": "c", "intention": "i", "fileName": "f", "canOfferSessionApproval": true});
    assert!(!errors(&validator_for("PermissionRequestWrite"), &broken).is_empty());
    let unknown_field = json!({"requestId": "r", "permissionRequest": {"kind": "read", "intention": "i", "path": "/p", "extra": 1}});
    assert!(!errors(&request_data, &unknown_field).is_empty());
    for (tool_name, args, kind) in calls_needing_permission(dir.path()) {
        let tool = registry.get(tool_name).unwrap();
        let ask: PermissionAsk = tool
            .permission(&args, &ctx)
            .unwrap_or_else(|e| panic!("{tool_name} {args}: {e}"))
            .unwrap_or_else(|| panic!("{tool_name} {args} asks for permission"));
        assert_eq!(ask.kind, kind);
        assert!(!ask.intention.is_empty());
        assert!(!ask.subject.is_empty());
        let mut request = ask.request.clone();
        let object = request.as_object_mut().expect("an object");
        assert!(
            !object.contains_key("toolCallId"),
            "the loop adds toolCallId"
        );
        assert_eq!(object["kind"], ask.kind.as_str());
        assert_eq!(object["intention"], ask.intention.as_str());
        object.insert("toolCallId".into(), json!("call_e53baaf38aac429c"));

        // The exact branch of the union, so a loose match elsewhere cannot hide a mistake.
        let branch = match kind {
            PermissionKind::Shell => "PermissionRequestShell",
            PermissionKind::Write => "PermissionRequestWrite",
            _ => unreachable!(),
        };
        let errs = errors(&validator_for(branch), &request);
        assert!(
            errs.is_empty(),
            "{tool_name} {args}: {errs:#?}\n{request:#}"
        );

        // And as the loop will write it: the data of a permission.requested event.
        let data = json!({
            "requestId": "9a29205b-675e-4a65-9bf4-198c2f1a5fdb",
            "permissionRequest": request,
        });
        let errs = errors(&request_data, &data);
        assert!(errs.is_empty(), "{tool_name} {args}: {errs:#?}");
    }
}

#[test]
fn reads_and_task_complete_need_no_permission() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "alpha\n").unwrap();
    let ctx = ToolContext::new(dir.path());
    let registry = ToolRegistry::builtin(true);
    for (name, args) in [
        ("view", json!({"path": "a.txt"})),
        ("view", json!({"path": "."})),
        ("glob", json!({"pattern": "*.txt"})),
        (
            "grep",
            json!({"pattern": "alpha", "output_mode": "content"}),
        ),
        ("task_complete", json!({"summary": "done"})),
    ] {
        let tool = registry.get(name).unwrap();
        assert_eq!(tool.permission(&args, &ctx), Ok(None), "{name}");
    }
}

#[test]
fn unknown_tools_get_the_runtime_message() {
    let registry = ToolRegistry::builtin(true);
    assert_eq!(
        registry.unknown_tool_message("str_replace_editor"),
        "Tool 'str_replace_editor' does not exist. Available tools that can be called are bash, read_bash, stop_bash, list_bash, view, create, edit, web_fetch, sql, read_agent, list_agents, write_agent, grep, glob, task, task_complete."
    );
}

#[tokio::test]
async fn a_recorded_session_replays_through_the_tools() {
    // c1-new-session: glob "*.txt" in a directory of three text files, then view alpha.txt.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("alpha.txt"),
        "alpha: the first file\nIt mentions apples and TODO items.\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("beta.txt"), "beta\n").unwrap();
    std::fs::write(dir.path().join("gamma.txt"), "gamma\n").unwrap();
    let ctx = ToolContext::new(dir.path());
    let registry = ToolRegistry::builtin(false);
    let glob = registry
        .get("glob")
        .unwrap()
        .run(json!({"pattern": "*.txt"}), &ctx)
        .await
        .unwrap();
    // The recording's order is the file system's; ours is sorted.
    assert_eq!(glob.content, "./alpha.txt\n./beta.txt\n./gamma.txt");
    let alpha = dir.path().join("alpha.txt");
    let view = registry
        .get("view")
        .unwrap()
        .run(json!({"path": alpha.to_str().unwrap()}), &ctx)
        .await
        .unwrap();
    // The Copilot CLI 1.0.81-0 numbers lines and shows the empty piece after the final newline.
    assert_eq!(
        view.content,
        "1. alpha: the first file\n2. It mentions apples and TODO items.\n3. "
    );
}
