//! The integration tests of this crate, one binary: each file of `tests/` is a module here,
//! so the crate links one test binary instead of one per file (see docs/performance.md).
//! A test that re-runs this binary as a child names itself by its module path
//! (`file::test_name`).

mod common;

mod cluster;
mod connect;
mod journal_suite;
mod lease;
mod listing;
mod live;
mod seal;
