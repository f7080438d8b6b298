# turnstile: the commands that matter are `make demo` and `make test`.
CARGO ?= cargo
BIN := target/release/turnstile

.PHONY: demo test build release lint bench bench-journal bench-audit bench-loop crash-soak clean-bench

## demo: build, then show what turnstile does with a recorded session (offline, under a minute).
demo: release
	bash scripts/demo.sh

## test: every unit, integration and property test, plus the short smoke runs.
test:
	$(CARGO) test --workspace --no-fail-fast

build:
	$(CARGO) build --workspace

release:
	$(CARGO) build --release -p turnstile

## lint: formatting and clippy, as CI checks them.
lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

## bench: journal append/read throughput and audit speed, side by side with wc/grep/jq.
bench: bench-journal bench-audit bench-loop

bench-journal: release
	$(CARGO) build --release -p turnstile-journal --example journal_bench
	bash scripts/bench-journal.sh

bench-audit: release
	bash scripts/bench-audit.sh

bench-loop: release
	$(CARGO) build --release -p turnstile-loop --example loop_bench
	target/release/examples/loop_bench --binary $(BIN)

## crash-soak: the SIGKILL crash test for many more rounds than `make test` runs.
crash-soak:
	TURNSTILE_SIGKILL_ROUNDS=500 $(CARGO) test --release -p turnstile-journal --test sigkill -- --nocapture

clean-bench:
	rm -rf target/bench
