//! Replaying a fixture and comparing in one call: [`Fixture::check`], [`Replay::check`], and the
//! tools a recording needs, looked at before anything runs.
//!
//! Its own file so the comparison (`check.rs`) sits on the fixture and the finished run
//! (`fixture.rs`, `runner.rs`), and these entry points sit on all three.

use std::path::Path;

use turnstile_tools::ToolRegistry;

use crate::check::{CheckReport, check_run, missing_tools};
use crate::divergence::Divergence;
use crate::error::FixtureError;
use crate::fixture::Fixture;
use crate::runner::{Replay, temp_workdir};

impl Fixture {
    /// A [`Divergence`] for each tool the recording ran that `tools` lacks (a replay would
    /// not do what the recording did).
    pub fn missing_tools(&self, tools: &ToolRegistry) -> Vec<Divergence> {
        missing_tools(self, tools)
    }

    /// Replays the fixture in a temporary copy of its working-dir contents and compares the
    /// new journal with the recording.
    pub fn check(&self) -> Result<CheckReport, FixtureError> {
        self.replay().check()
    }

    /// Replays the fixture with the tools working in `workdir` as it is, and compares.
    pub fn check_in(&self, workdir: &Path) -> Result<CheckReport, FixtureError> {
        self.replay().check_in(workdir)
    }
}

impl Replay<'_> {
    /// Replays in a temporary copy of the fixture's working-dir contents and compares.
    pub fn check(self) -> Result<CheckReport, FixtureError> {
        let dir = temp_workdir(self.fixture())?;
        self.check_in(dir.path())
    }

    /// Replays with the tools working in `workdir` and compares the new journal with the
    /// recording. A recording that calls a tool these tools lack is reported without running.
    pub fn check_in(self, workdir: &Path) -> Result<CheckReport, FixtureError> {
        let fixture = self.fixture();
        let tools = self.offered_tools();
        let missing = missing_tools(fixture, &tools);
        if !missing.is_empty() {
            return Ok(CheckReport::not_run(fixture, missing));
        }
        let run = self.tools_arc(tools).run_in(workdir)?;
        check_run(fixture, &run)
    }
}
