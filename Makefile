# turnstile: the commands that matter are `make demo` and `make test`.
CARGO ?= cargo
BIN := target/release/turnstile
# The benchmarks measure release code built with debug info (`[profile.profiling]`), so a
# profile of a slow run names its lines; users install the stripped `release` build.
PBIN := target/profiling/turnstile


.PHONY: stress
.PHONY: demo test build release profiling modules install lint bench bench-report bench-journal bench-audit bench-loop bench-model bench-sdk bench-sessions bench-listing bench-stores bench-sandbox bench-diff cluster-soak crash-soak long-soak fuzz clean-bench

## demo: build, then replay a recorded session with real tools, audit it, resume it, check it
## (offline, no model server, under a minute after the build).
demo: release
	bash scripts/demo.sh

## bench-otel: `export --otlp` of the 2,002-turn fixture to a loopback receiver (time, peak RSS).
.PHONY: bench-otel
bench-otel:
	bash scripts/bench-otel.sh

## bench-otel-live: turns/s of `turnstile run` (scripted model, 201 turns) with and without
## live traces to a loopback receiver.
.PHONY: bench-otel-live
bench-otel-live:
	bash scripts/bench-otel-live.sh

## otel-phoenix: `turnstile export --otlp` against a real backend: Arize Phoenix installed into
## a virtual environment under the target directory, started on a free loopback port, sent
## the 2,002-turn fixture and the real runtime's sub-agent recording, asked for the spans back.
.PHONY: otel-phoenix
otel-phoenix:
	bash scripts/otel-phoenix.sh

## fixtures: record the turnstile fixtures in fixtures/ again against the scripted model server.
.PHONY: fixtures
fixtures:
	bash scripts/record-fixtures.sh

## test: every unit, integration and property test, plus the short smoke runs.
## Incremental compilation is off unless CARGO_INCREMENTAL says otherwise: a run from a clean
## tree gains nothing from it and it doubles target/. The targets are named so that neither the
## benchmark examples (clippy checks them) nor doc tests are built: the examples in the crate
## docs are `ignore` blocks whose lines run as unit or integration tests (each names its test),
## which saves a rustdoc compilation per crate (docs/decisions.md, "Doc examples").
##
## The tests run on cargo-nextest (README's set-up): each in a process of its own, scheduled
## across all the test binaries at once, the slowest first (.config/nextest.toml), where `cargo
## test` runs the binaries one after another and waits on each one's slowest test (same build,
## quiet machine: 122 s with cargo test, 77 s with nextest). Six tests at a time (TEST_THREADS=):
## most of the suite's time is waiting on real servers, processes, elections and timeouts, not
## the CPU. Without cargo-nextest, `cargo test` runs the same tests (and says so).
TEST_THREADS ?= 6
TEST_TARGETS := --workspace --lib --bins --tests --no-fail-fast
test:
	@if $(CARGO) nextest --version >/dev/null 2>&1; then \
		CARGO_INCREMENTAL=$${CARGO_INCREMENTAL:-0} $(CARGO) nextest run $(TEST_TARGETS) --test-threads=$(TEST_THREADS); \
	else \
		echo "cargo-nextest not found (README, set-up): running the same tests with cargo test, slower"; \
		CARGO_INCREMENTAL=$${CARGO_INCREMENTAL:-0} $(CARGO) test $(TEST_TARGETS) -- --test-threads=$(TEST_THREADS); \
	fi

build:
	$(CARGO) build --workspace

## install: `turnstile` and the offline `scripted-model` server into ~/.cargo/bin (on PATH after
## rustup's set-up), from this checkout.
install:
	$(CARGO) install --locked --path crates/cli
	$(CARGO) install --locked --path crates/scripted-model

release:
	$(CARGO) build --release -p turnstile

profiling:
	$(CARGO) build --profile profiling -p turnstile

## modules: no module of any crate imports one that imports it back (CI runs it).
modules:
	python3 scripts/module-cycles.py

## lint: formatting, clippy and the API docs (warnings are errors), as CI checks them.
lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --workspace --no-deps

## bench: journal append/read throughput; the read path (audit and --count next to grep with
## both cores free and one busy, the floors under them (reading alone, JSON checked in memory,
## jq), fold, checkpoint, stale-checkpoint resume, audit memory);
## model answers; `sessions` over 100 000 sessions; the JetStream store next to the file store;
## the session report in Chromium; the SDK client against both runtimes.
bench: bench-journal bench-audit bench-loop bench-model bench-sessions bench-listing bench-stores bench-report bench-sdk bench-session-rpc bench-sandbox bench-diff

## bench-sandbox: spawn to exit of `true` unconfined and in the kernel sandbox of three policies,
## and what building each sandbox costs (once per session).
bench-sandbox:
	$(CARGO) build --profile profiling -p turnstile-sandbox --example sandbox_bench
	target/profiling/examples/sandbox_bench

## bench-diff: `turnstile diff` of two 10,000-turn sessions differing at turn 9,000, next to
## `diff <(jq -c ...) <(jq -c ...)` of the same files: wall time and peak RSS.
bench-diff: profiling
	$(CARGO) build --profile profiling -p turnstile-diff --example diff_bench
	target/profiling/examples/diff_bench --binary $(PBIN)

bench-journal: profiling
	$(CARGO) build --profile profiling -p turnstile-journal --example journal_bench
	bash scripts/bench-journal.sh

bench-audit:
	bash scripts/bench-audit.sh

## bench-report: `turnstile report` on the 2,002-turn fixture, and headless Chromium loading the
## page next to an empty page (needs chromium).
bench-report: profiling
	bash scripts/bench-report.sh

## bench-sessions: `sessions` and `resume --last` over 100 000 generated sessions, with the
## session index cold, warm and bypassed (COUNT=, REPS=, PREVIOUS=<older binary> to compare).
bench-sessions: profiling
	bash scripts/bench-sessions.sh

## bench-listing: `sessions` over 100 000 and 1 000 000 generated stored sessions, the file
## store next to JetStream (COUNTS=, REPS=, STORES=; PROFILE=release or TURNSTILE=<binary>
## to time another build); the generated data is deleted afterwards.
bench-listing:
	[ -n "$$TURNSTILE" ] || $(CARGO) build --profile $${PROFILE:-profiling} -p turnstile
	bash scripts/bench-listing.sh

bench-loop: profiling
	$(CARGO) build --profile profiling -p turnstile-loop --example loop_bench
	target/profiling/examples/loop_bench --binary $(PBIN)

## bench-model: huge SSE events (linear read) and endless answers (bounded memory).
bench-model:
	$(CARGO) build --profile profiling -p turnstile-providers --example model_bench
	target/profiling/examples/model_bench

## bench-stores: file store next to JetStream (R1, and R3 on a local 3-node cluster): durable
## appends/s with 1 and 16 sessions, resume with and without a checkpoint, `sessions` over many.
bench-stores:
	$(CARGO) build --profile profiling -p turnstile-store-nats --example store_bench
	target/profiling/examples/store_bench

## cluster-soak: a 200-turn session on a 3-node JetStream cluster with the stream leader killed,
## its export compared event for event with a file-store run of the same script; 30 leader kills
## in one session at the default lease (0 writer stops); 20 paused-writer takeovers (nothing of
## the old writer in the journal, in watch or at the model server); then 20 rounds of reads
## right after a node that missed writes comes back.
cluster-soak:
	$(CARGO) test -p turnstile --test integration -- --ignored --nocapture store_vs_files::cluster_leader_killed_mid_session_soak
	CLUSTER_LEADER_KILLS=30 $(CARGO) test -p turnstile --test integration -- --ignored --nocapture store_vs_files::cluster_leader_kills_at_the_default_lease_soak
	ZOMBIE_ROUNDS=20 $(CARGO) test -p turnstile --test integration -- --ignored --nocapture store_nats::zombie_writers_soak
	CLUSTER_READ_ROUNDS=20 $(CARGO) test -p turnstile-store-nats --test integration -- --include-ignored cluster::

## long-soak: a 5000-turn session in an 8000-token window against the scripted model: every
## request under the window, every LLM call (summary calls included) counted by the audit and
## rebuilt by the fold (`make test` runs the same with 300 turns).
long-soak:
	TURNSTILE_SOAK_TURNS=5000 $(CARGO) test --release -p turnstile --test integration -- --nocapture compaction::a_long_session

## crash-soak: the SIGKILL crash test for many more rounds than `make test` runs.
crash-soak:
	TURNSTILE_SIGKILL_ROUNDS=500 $(CARGO) test --release -p turnstile-journal --test integration -- --nocapture sigkill::

## stress: the long variants of the bounds' tests, each section stopping by itself
## (`scripts/stress.sh`; SECTIONS= narrows it): `model` sends one answer with 1,000 `bash`
## calls (at most 3 at once), 1,000 new tool-call indexes and the hostile streams; `server` floods a server limited to 1024
## descriptors with 1,000 idle connections; `journal` reads a 1 GB line and a 2 GB sparse
## journal with every command that reads one; peak RSS and wall time are printed.
SECTIONS ?=
.PHONY: stress
stress:
	CARGO="$(CARGO)" bash scripts/stress.sh $(SECTIONS)

## fuzz: many more random inputs through the journal's, the audit's and the shell analysis's parsers
## (and the policy traced under real bash) than `make test` runs.
fuzz:
	PROPTEST_CASES=20000 $(CARGO) test --release -p turnstile-journal --test integration -- fuzz_inputs::
	PROPTEST_CASES=2000 $(CARGO) test --release -p turnstile-replay --test integration -- audit::
	PROPTEST_CASES=50000 $(CARGO) test --release -p turnstile-permissions --test integration -- shell_fuzz::
	PROPTEST_CASES=5000 $(CARGO) test --release -p turnstile-tools --test integration -- policy_traced::
	PROPTEST_CASES=2000 $(CARGO) test --release -p turnstile-sandbox --test integration -- spellings::

clean-bench:
	rm -rf target/bench

## bench-sdk: through the official TypeScript client, create + 3 turns + stop with turnstile and
## with the Copilot CLI (median of 5 each), then 50 concurrent sessions x 20 tool-calling turns
## on one turnstile server (turns/s, peak RSS, every journal audited). Needs the clients and the
## CLI that `make conformance` installs into target/conformance.
bench-sdk: profiling
	@test -d target/conformance/node/node_modules/@github/copilot-sdk || { echo "bench-sdk: run make conformance once first (it installs the SDK client and the Copilot CLI)"; exit 2; }
	$(CARGO) build --profile profiling -p turnstile-scripted-model
	TURNSTILE_BIN=$(PBIN) SCRIPTED_MODEL_BIN=target/profiling/scripted-model node conformance/ts/bench/sdk_bench.mjs

## bench-session-rpc: `sessions.fork` and `session.eventLog.read` of a 10,014-event session
## (fixtures/long-session) through the official TypeScript client, turnstile next to the
## Copilot CLI (median of RUNS, default 5). Needs what `make conformance` installs.
.PHONY: bench-session-rpc
bench-session-rpc:
	@test -d target/conformance/node/node_modules/@github/copilot-sdk || { echo "bench-session-rpc: run make conformance once first (it installs the SDK client and the Copilot CLI)"; exit 2; }
	$(CARGO) build --release -p turnstile
	TURNSTILE_BIN=$(BIN) node conformance/ts/bench/session_rpc_bench.mjs --runs $${RUNS:-5}

## conformance: the official Copilot SDK clients (npm @github/copilot-sdk, PyPI github-copilot-sdk)
## drive the turnstile binary against the scripted model, then the differential harness runs the
## same scenarios against the Copilot CLI (npm @github/copilot) and turnstile and compares them;
## installs all of them into target/conformance on first use (offline afterwards). Not part of
## `make test`.
.PHONY: conformance
conformance:
	CARGO="$(CARGO)" bash conformance/run.sh

## conformance-soak: the differential scenarios SOAK_RUNS times (default 3), each beside SOAK_LOAD
## processes spinning on the CPU (default 2), to find the Copilot CLI's answers that move with
## timing before a loaded CI machine does; SOAK_SCENARIOS= narrows it. Needs `make conformance` once.
SOAK_RUNS ?= 3
SOAK_LOAD ?= 2
SOAK_SCENARIOS ?=
.PHONY: conformance-soak
conformance-soak:
	@test -x target/conformance/node/node_modules/@github/copilot-linux-x64/copilot || { echo "conformance-soak: run make conformance once first (it installs the SDK client and the Copilot CLI)"; exit 2; }
	$(CARGO) build -p turnstile -p turnstile-scripted-model
	TURNSTILE_BIN=target/debug/turnstile SCRIPTED_MODEL_BIN=target/debug/scripted-model node conformance/ts/differential/soak.mjs --runs $(SOAK_RUNS) --load $(SOAK_LOAD) $(SOAK_SCENARIOS)
