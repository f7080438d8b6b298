//! The integration tests of this crate, one binary: each file of `tests/` is a module here,
//! so the crate links one test binary instead of one per file (see docs/performance.md).
//! A test that re-runs this binary as a child names itself by its module path
//! (`file::test_name`).

#[path = "support/server.rs"]
mod server;

mod hostile;

/// Every file of `tests/` is declared above: with `autotests = false` a file left out would
/// silently never run.
#[test]
fn every_test_file_is_a_module() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let root = include_str!("integration.rs");
    let cargo = include_str!("../Cargo.toml");
    for entry in std::fs::read_dir(&dir).expect("tests dir") {
        let path = entry.expect("entry").path();
        let (Some(stem), Some("rs")) = (
            path.file_stem().and_then(|s| s.to_str()),
            path.extension().and_then(|s| s.to_str()),
        ) else {
            continue;
        };
        if stem == "integration" {
            continue;
        }
        let declared = root.contains(&format!("\nmod {stem};"));
        let own_binary = cargo.contains(&format!("path = \"tests/{stem}.rs\""));
        assert!(
            declared || own_binary,
            "tests/{stem}.rs is neither a module of tests/integration.rs nor a [[test]] of its own: add `mod {stem};`"
        );
    }
}
