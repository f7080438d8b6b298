//! `session.plugins.list` and `session.extensions.*` over a real socket: a turnstile session
//! has no plugins or extensions, and answers as the Copilot CLI does for one without them.

use crate::common;

use common::{TestServer, create};
use serde_json::json;
use turnstile_scripted_model::{Script, ScriptedServer};

#[tokio::test]
async fn plugins_and_extensions_are_empty_and_cannot_be_changed() {
    let model = ScriptedServer::start(Script::new()).await.unwrap();
    let t = TestServer::start(|_| {}).await;
    let mut client = t.client().await;
    let id = create(&mut client, &model.url(), json!({})).await;
    let session = json!({"sessionId": id});
    assert_eq!(
        client.ok("session.plugins.list", session.clone()).await,
        json!({"plugins": []})
    );
    assert_eq!(
        client.ok("session.extensions.list", session.clone()).await,
        json!({"extensions": []})
    );
    for method in ["enable", "disable", "reload"] {
        let params = json!({"sessionId": id, "id": "missing-extension"});
        let error = client
            .err(&format!("session.extensions.{method}"), params)
            .await;
        assert_eq!(
            error,
            json!({"code": -32603, "message": format!("Request session.extensions.{method} failed with message: Extensions not available")})
        );
    }
    // An unknown session is refused as for every session method.
    let unknown = json!({"sessionId": "00000000-0000-4000-8000-000000000000"});
    let error = client.err("session.extensions.list", unknown).await;
    assert_eq!(error["code"], -32001, "{error}");
    t.stop().await;
}
