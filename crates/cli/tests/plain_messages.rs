//! Messages that say what is wrong and where: a settings key one edit from a setting, and a
//! scripted-model port already taken. The real binaries, real files and sockets.

use std::process::Command;

#[test]
fn a_misspelt_settings_key_is_named_with_its_file_and_the_setting_meant() {
    let home = tempfile::tempdir().unwrap();
    let settings = home.path().join("settings.json");
    std::fs::write(&settings, r#"{"modle": "gpt-5", "theme": "dark"}"#).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_turnstile"))
        .arg("config")
        .env("COPILOT_HOME", home.path())
        .output()
        .unwrap();
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "warning: {}: unknown setting \"modle\" is ignored; did you mean \"model\"?",
            settings.display()
        )),
        "{stderr}"
    );
    assert!(
        !stderr.contains("theme"),
        "the Copilot CLI's own keys are left alone: {stderr}"
    );
}

#[test]
fn scripted_model_names_the_port_it_cannot_listen_on() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let script = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/offline-script.json");
    let binary =
        std::path::PathBuf::from(env!("CARGO_BIN_EXE_turnstile")).with_file_name("scripted-model");
    let out = Command::new(binary)
        .arg("--script")
        .arg(script)
        .args(["--port", &port])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("cannot listen on 127.0.0.1:{port}")),
        "{stderr}"
    );
}
