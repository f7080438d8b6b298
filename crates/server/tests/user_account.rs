//! The server's user settings and signed-in GitHub accounts over real sockets, and the files
//! they leave in the Copilot home (the parent of the state root): `user.settings.get/set`
//! as the Copilot CLI lists and writes `settings.json` (a legacy `config.json` entry
//! shadowing a key, `null` clearing one, a wrong value writing nothing), and
//! `account.login/getCurrentAuth/getAllUsers/logout/getQuota` recording logins in
//! `config.json` with the token in no file and no journal unless plaintext storage is asked
//! for.

use crate::common;
use crate::session_account::GitHubApi;

use std::collections::HashMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use common::{TestServer, journal_lines};
use serde_json::{Value, json};
use turnstile_scripted_model::{Script, ScriptedServer};

const TOKEN: &str = "token-carol-secret";

fn users() -> HashMap<&'static str, Value> {
    HashMap::from([(
        TOKEN,
        json!({
            "login": "carol",
            "copilot_plan": "individual_pro",
            "quota_snapshots": {"chat": {
                "entitlement": 100, "overage_count": 2, "overage_permitted": true,
                "percent_remaining": 75, "timestamp_utc": "2026-04-30T00:00:00Z"
            }}
        }),
    )])
}

async fn server(api: &GitHubApi) -> TestServer {
    let api_url = api.url.clone();
    TestServer::start(move |config| config.github_api_url = api_url).await
}

fn read(t: &TestServer, name: &str) -> String {
    std::fs::read_to_string(t.dir.path().join(name)).unwrap_or_default()
}

/// Every file under `dir` whose bytes hold `needle`.
fn files_holding(dir: &Path, needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if std::fs::read(&path)
                .is_ok_and(|b| b.windows(needle.len()).any(|w| w == needle.as_bytes()))
            {
                found.push(path.display().to_string());
            }
        }
    }
    found
}

#[tokio::test]
async fn settings_are_listed_written_as_the_cli_writes_them_and_cleared_by_null() {
    let api = GitHubApi::start(users()).await;
    let t = server(&api).await;
    let mut client = t.client().await;

    let before = client.ok("user.settings.get", json!({})).await;
    let listed = before["settings"].as_object().unwrap();
    assert_eq!(listed.len(), 85);
    assert_eq!(
        listed["beep"],
        json!({"value": false, "default": false, "isDefault": true})
    );
    assert_eq!(
        listed["model"],
        json!({"value": null, "default": null, "isDefault": true})
    );

    let set = client
        .ok(
            "user.settings.set",
            json!({"settings": {"beep": true, "unknownKey": 5}}),
        )
        .await;
    assert_eq!(set, json!({"shadowedKeys": []}));
    let path = t.dir.path().join("settings.json");
    assert_eq!(
        read(&t, "settings.json"),
        "{\n  \"beep\": true,\n  \"unknownKey\": 5\n}\n"
    );
    assert_eq!(
        std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o600
    );
    assert_eq!(
        client.ok("user.settings.reload", Value::Null).await,
        Value::Null
    );
    let after = client.ok("user.settings.get", json!({})).await;
    assert_eq!(
        after["settings"]["beep"],
        json!({"value": true, "default": false, "isDefault": false})
    );
    assert!(after["settings"].get("unknownKey").is_none());

    // A key of the legacy config.json wins on read: written, and reported shadowed.
    std::fs::write(t.dir.path().join("config.json"), "{\"mouse\": true}").unwrap();
    let set = client
        .ok(
            "user.settings.set",
            json!({"settings": {"mouse": false, "beep": null}}),
        )
        .await;
    assert_eq!(set, json!({"shadowedKeys": ["mouse"]}));
    assert_eq!(
        read(&t, "settings.json"),
        "{\n  \"unknownKey\": 5,\n  \"mouse\": false\n}\n"
    );
    let after = client.ok("user.settings.get", json!({})).await;
    assert_eq!(after["settings"]["mouse"]["value"], json!(true));
    assert_eq!(after["settings"]["beep"]["isDefault"], json!(true));

    // A wrong value writes nothing.
    let error = client
        .err(
            "user.settings.set",
            json!({"settings": {"beep": true, "copyOnSelect": "yes"}}),
        )
        .await;
    assert_eq!(
        error,
        json!({"code": -32603, "message": "Request user.settings.set failed with message: user.settings.set: invalid value for 'copyOnSelect' (copyOnSelect: Expected boolean, received string)"})
    );
    let error = client
        .err("user.settings.set", json!({"settings": 5}))
        .await;
    assert_eq!(
        error["message"],
        "Request user.settings.set failed with message: user.settings.set: `settings` must be an object keyed by setting name"
    );
    assert_eq!(
        read(&t, "settings.json"),
        "{\n  \"unknownKey\": 5,\n  \"mouse\": false\n}\n"
    );
    t.stop().await;
}

#[tokio::test]
async fn a_login_is_recorded_without_its_token_and_logout_forgets_it() {
    let api = GitHubApi::start(users()).await;
    let t = server(&api).await;
    let model = ScriptedServer::start(Script::new()).await.unwrap();
    let mut client = t.client().await;

    assert_eq!(
        client.ok("account.getCurrentAuth", Value::Null).await,
        json!({})
    );
    let login = client
        .ok(
            "account.login",
            json!({"host": "https://github.com", "login": "carol", "token": TOKEN}),
        )
        .await;
    assert_eq!(login, json!({"storedInVault": false}));
    assert_eq!(*api.seen.lock().unwrap(), [format!("Bearer {TOKEN}")]);
    assert_eq!(
        read(&t, "config.json"),
        "// User settings belong in settings.json.\n// This file is managed automatically.\n{\n  \"lastLoggedInUser\": {\n    \"host\": \"https://github.com\",\n    \"login\": \"carol\"\n  },\n  \"loggedInUsers\": [\n    {\n      \"host\": \"https://github.com\",\n      \"login\": \"carol\"\n    }\n  ]\n}\n"
    );
    let current = client.ok("account.getCurrentAuth", Value::Null).await;
    assert_eq!(
        current,
        json!({"authInfo": {"type": "user", "host": "https://github.com", "login": "carol",
                            "copilotUser": {"login": "carol", "copilot_plan": "individual_pro"}}})
    );
    assert_eq!(
        client.ok("account.getAllUsers", Value::Null).await,
        json!([])
    );
    let quota = client.ok("account.getQuota", json!({})).await;
    assert_eq!(
        quota,
        json!({"quotaSnapshots": {"chat": {
            "isUnlimitedEntitlement": false, "entitlementRequests": 100, "usedRequests": 25,
            "usageAllowedWithExhaustedQuota": true, "overage": 2,
            "overageAllowedWithExhaustedQuota": true, "remainingPercentage": 75,
            "resetDate": "2026-04-30T00:00:00Z"}}})
    );

    // A session run while signed in: its journal, like every other file, holds no token.
    let id = common::create(&mut client, &model.url(), json!({})).await;
    client.ok("session.detach", json!({"sessionId": id})).await;
    assert!(!journal_lines(&t.journal(&id)).is_empty());
    assert_eq!(files_holding(t.dir.path(), TOKEN), Vec::<String>::new());

    let logout = client
        .ok(
            "account.logout",
            json!({"authInfo": current["authInfo"].clone()}),
        )
        .await;
    assert_eq!(logout, json!({"hasMoreUsers": false}));
    assert_eq!(
        client.ok("account.getCurrentAuth", Value::Null).await,
        json!({})
    );
    assert!(read(&t, "config.json").contains("\"loggedInUsers\": []"));
    assert!(!read(&t, "config.json").contains("lastLoggedInUser"));
    t.stop().await;
}

#[tokio::test]
async fn plaintext_storage_keeps_the_token_and_a_refused_token_records_nothing() {
    let api = GitHubApi::start(users()).await;
    let t = server(&api).await;
    let mut client = t.client().await;

    let error = client
        .err(
            "account.login",
            json!({"host": "https://github.com", "login": "mallory", "token": "wrong"}),
        )
        .await;
    assert_eq!(error["code"], -32603);
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("Failed to fetch Copilot user info: 401 Unauthorized"),
        "{error}"
    );
    assert!(!t.dir.path().join("config.json").exists());

    client
        .ok(
            "user.settings.set",
            json!({"settings": {"storeTokenPlaintext": true}}),
        )
        .await;
    // No login given: the token's own.
    let login = client
        .ok(
            "account.login",
            json!({"host": "https://github.com", "token": TOKEN}),
        )
        .await;
    assert_eq!(login, json!({"storedInVault": true}));
    let config = read(&t, "config.json");
    assert!(
        config.contains(&format!("\"https://github.com:carol\": \"{TOKEN}\"")),
        "{config}"
    );
    client
        .ok(
            "account.logout",
            json!({"authInfo": {"type": "user", "host": "https://github.com", "login": "carol"}}),
        )
        .await;
    assert!(!read(&t, "config.json").contains(TOKEN));
    t.stop().await;
}
