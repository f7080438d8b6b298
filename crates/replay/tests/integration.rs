//! The integration tests of this crate, one binary: each file of `tests/` is a module here,
//! so the crate links one test binary instead of one per file (see docs/performance.md).
//! A test that re-runs this binary as a child names itself by its module path
//! (`file::test_name`).

mod common;

mod audit;
mod audit_memory;
mod call_counts;
mod checkpoint;
mod compaction;
mod compaction_prop;
mod crash_resume;
mod fold_fixtures;
mod fold_oversized;
mod notifications;
mod old_journals;
mod resume_plan;
mod rewind;
mod skills;
mod subagents;
mod truncation;
