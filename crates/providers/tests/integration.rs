//! The integration tests of this crate, one binary: each file of `tests/` is a module here,
//! so the crate links one test binary instead of one per file (see docs/performance.md).

mod model_bounds;
mod model_choices;
mod model_endpoint;
mod model_limits;
mod model_openai;
mod model_replay;
