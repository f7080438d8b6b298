//! The integration tests of this crate, one binary: each file of `tests/` is a module here,
//! so the crate links one test binary instead of one per file (see docs/performance.md).
//! A test that re-runs this binary as a child names itself by its module path
//! (`file::test_name`).

mod fixtures;
mod history_fit;

/// Every file of every crate's `tests/` runs: with `autotests = false`, a file that is neither a
/// module of its crate's `tests/integration.rs` nor a `[[test]]` of its own would silently
/// never be compiled. One check for the whole workspace, here.
#[test]
fn every_test_file_of_every_crate_is_a_module_or_a_binary() {
    let crates = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut checked = 0;
    for krate in std::fs::read_dir(&crates).expect("crates/") {
        let krate = krate.expect("entry").path();
        let Ok(files) = std::fs::read_dir(krate.join("tests")) else {
            continue;
        };
        let root = std::fs::read_to_string(krate.join("tests/integration.rs")).unwrap_or_default();
        let cargo = std::fs::read_to_string(krate.join("Cargo.toml")).expect("Cargo.toml");
        for file in files {
            let path = file.expect("entry").path();
            let (Some(stem), Some("rs")) = (
                path.file_stem().and_then(|s| s.to_str()),
                path.extension().and_then(|s| s.to_str()),
            ) else {
                continue;
            };
            let declared = stem == "integration" || root.contains(&format!("\nmod {stem};"));
            let own_binary = cargo.contains(&format!("path = \"tests/{stem}.rs\""));
            assert!(
                declared || own_binary,
                "{} is neither a module of its crate's tests/integration.rs nor a [[test]] of its own: add `mod {stem};` there",
                path.display()
            );
            checked += 1;
        }
    }
    assert!(
        checked > 100,
        "only {checked} test files found under {}",
        crates.display()
    );
}
