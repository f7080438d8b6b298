//! The integration tests of this crate, one binary: each file of `tests/` is a module here,
//! so the crate links one test binary instead of one per file (see docs/performance.md).

mod formats;
mod verify;
