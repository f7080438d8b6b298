//! The integration tests of this crate, one binary: each file of `tests/` is a module here,
//! so the crate links one test binary instead of one per file (see docs/performance.md).
//! A test that re-runs this binary as a child names itself by its module path
//! (`file::test_name`).

mod common;

mod bad_input;
mod crash_recovery;
mod fuzz_inputs;
mod huge_lines;
mod payload_round_trip;
mod round_trip;
mod runtime_keys;
mod schema_conformance;
mod sealed;
mod session_index;
mod sigkill;
mod two_writers;
