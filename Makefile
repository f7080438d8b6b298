# turnstile: the commands that matter are `make demo` and `make test`.
CARGO ?= cargo
BIN := target/release/turnstile

.PHONY: demo test build release lint bench bench-journal bench-audit bench-loop crash-soak fuzz clean-bench

## demo: build, then replay a recorded session with real tools, audit it, resume it, check it
## (offline, no model server, under a minute after the build).
demo: release
	bash scripts/demo.sh

## fixtures: record the turnstile fixtures in fixtures/ again against the scripted model server.
.PHONY: fixtures
fixtures:
	bash scripts/record-fixtures.sh

## test: every unit, integration and property test, plus the short smoke runs.
test:
	$(CARGO) test --workspace --no-fail-fast

build:
	$(CARGO) build --workspace

release:
	$(CARGO) build --release -p turnstile

## lint: formatting, clippy and the API docs (warnings are errors), as CI checks them.
lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --workspace --no-deps

## bench: journal append/read throughput; the read path (audit and --count next to grep with
## both cores free and one busy, fold, checkpoint, stale-checkpoint resume, audit memory).
bench: bench-journal bench-audit bench-loop

bench-journal: release
	$(CARGO) build --release -p turnstile-journal --example journal_bench
	bash scripts/bench-journal.sh

bench-audit:
	bash scripts/bench-audit.sh

bench-loop: release
	$(CARGO) build --release -p turnstile-loop --example loop_bench
	target/release/examples/loop_bench --binary $(BIN)

## crash-soak: the SIGKILL crash test for many more rounds than `make test` runs.
crash-soak:
	TURNSTILE_SIGKILL_ROUNDS=500 $(CARGO) test --release -p turnstile-journal --test sigkill -- --nocapture

## fuzz: many more random inputs through the journal's and the audit's parsers than `make test` runs.
fuzz:
	PROPTEST_CASES=20000 $(CARGO) test --release -p turnstile-journal --test fuzz_inputs
	PROPTEST_CASES=2000 $(CARGO) test --release -p turnstile-replay --test audit

clean-bench:
	rm -rf target/bench

## conformance: the official Copilot SDK clients (npm @github/copilot-sdk, PyPI github-copilot-sdk)
## drive the turnstile binary against the scripted model; installs them into target/conformance
## on first use (offline afterwards). Not part of `make test`.
.PHONY: conformance
conformance:
	CARGO="$(CARGO)" bash conformance/run.sh
