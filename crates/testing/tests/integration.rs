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

/// `make test` runs no doc tests (`--lib --bins --tests`: a rustdoc compilation per crate for a
/// handful of examples cost it a minute), so a Rust example in a crate's docs would never run:
/// each is an `ignore` block naming the test that runs its lines (docs/decisions.md, "Doc
/// examples run as tests").
#[test]
fn no_doc_example_is_left_for_doc_tests_that_do_not_run() {
    let crates = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    let mut dirs: Vec<_> = std::fs::read_dir(&crates)
        .expect("crates/")
        .map(|e| e.expect("entry").path().join("src"))
        .collect();
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    assert!(files.len() > 100, "only {} source files found", files.len());
    for path in files {
        let text = std::fs::read_to_string(&path).expect("source file");
        let mut open = false;
        for (n, line) in text.lines().enumerate() {
            let doc = line.trim_start();
            let Some(rest) = doc.strip_prefix("//!").or_else(|| doc.strip_prefix("///")) else {
                continue;
            };
            let Some(info) = rest.trim().strip_prefix("```") else {
                continue;
            };
            if open {
                open = false;
                continue;
            }
            open = true;
            let runs = info.is_empty()
                || info.split(',').any(|t| {
                    matches!(
                        t.trim(),
                        "rust" | "no_run" | "should_panic" | "compile_fail"
                    )
                });
            assert!(
                !runs,
                "{}:{}: a doc example that only a doc test would run; make it ```ignore and name the unit or integration test that runs its lines",
                path.display(),
                n + 1
            );
        }
    }
}
