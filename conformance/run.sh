#!/usr/bin/env bash
# Conformance: the official Copilot SDK clients, unmodified, drive the turnstile binary; then
# the differential harness runs the same client scenarios against the real Copilot CLI (the
# reference) and turnstile and compares their model requests, live events and journals.
#
# Installs @github/copilot-sdk (+ ajv) and the reference runtime @github/copilot from npm, and
# github-copilot-sdk from PyPI, into target/conformance/ (never globally; pinned by
# conformance/node/package-lock.json and conformance/py/requirements.txt), builds turnstile and
# the scripted model, then runs the TypeScript scenarios, the Python basic scenario and the
# differential scenarios against a scripted model on 127.0.0.1. After the first install
# everything runs offline: the installs are skipped while their stamps match, and npm's cache
# lives in target/conformance/npm-cache. Without the reference runtime (an install that could
# not fetch it), the differential part is skipped with a message; the rest still runs.
# `conformance/run.sh --differential [scenario ...]` runs only the differential part.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=$ROOT/target/conformance
CARGO=${CARGO:-cargo}
mkdir -p "$OUT"

command -v node >/dev/null || { echo "conformance: node is required" >&2; exit 2; }

echo "== build turnstile and the scripted model"
$CARGO build -p turnstile -p turnstile-scripted-model
export TURNSTILE_BIN=$ROOT/target/debug/turnstile
export SCRIPTED_MODEL_BIN=$ROOT/target/debug/scripted-model

stamp_of() { cat "$@" | sha256sum | cut -d' ' -f1; }

echo "== TypeScript client (@github/copilot-sdk)"
NODE_DIR=$OUT/node
NODE_STAMP=$(stamp_of conformance/node/package.json conformance/node/package-lock.json)
if [ "$(cat "$NODE_DIR/.stamp" 2>/dev/null)" != "$NODE_STAMP" ] || [ ! -d "$NODE_DIR/node_modules/@github/copilot-sdk" ]; then
    mkdir -p "$NODE_DIR"
    cp conformance/node/package.json conformance/node/package-lock.json "$NODE_DIR/"
    # `npm install` (not `ci`): the lock pins every version, but the registry may lack the
    # optional runtime packages of other platforms, which `npm ci` would refuse.
    npm install --prefix "$NODE_DIR" --no-audit --no-fund --cache "$OUT/npm-cache" --prefer-offline
    echo "$NODE_STAMP" > "$NODE_DIR/.stamp"
else
    echo "installed (stamp matches; no network needed)"
fi
node -e 'const p=require(process.argv[1]); console.log("@github/copilot-sdk", p.version)' \
    "$NODE_DIR/node_modules/@github/copilot-sdk/package.json"

failed=0
failed_parts=""
fail() { failed=1; failed_parts="$failed_parts $1"; }
only_differential=0
if [ "${1:-}" = "--differential" ]; then
    only_differential=1
    shift
fi
if [ "$only_differential" -eq 0 ]; then
    node conformance/ts/scenarios.mjs || fail "ts-scenarios"
fi

echo "== Python client (github-copilot-sdk)"
PY_DIR=$OUT/py
PY_STAMP=$(stamp_of conformance/py/requirements.txt)
if ! command -v python3 >/dev/null; then
    echo "SKIP py/basic: python3 not found"
elif [ "$(cat "$PY_DIR/.stamp" 2>/dev/null)" != "$PY_STAMP" ] || [ ! -d "$PY_DIR/copilot" ]; then
    if python3 -m pip install --quiet --disable-pip-version-check --no-warn-conflicts \
        --root-user-action=ignore --target "$PY_DIR" \
        --upgrade -r conformance/py/requirements.txt; then
        echo "$PY_STAMP" > "$PY_DIR/.stamp"
    else
        echo "SKIP py/basic: github-copilot-sdk could not be installed"
    fi
fi
if [ "$only_differential" -eq 0 ] && [ -f "$PY_DIR/.stamp" ] && [ -d "$PY_DIR/copilot" ]; then
    python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import importlib.metadata as m; print("github-copilot-sdk", m.version("github-copilot-sdk"))' "$PY_DIR"
    if python3 conformance/py/basic.py "$OUT/py-events.jsonl"; then
        node conformance/ts/validate.mjs "$OUT/py-events.jsonl" || fail "py-schema"
    else
        fail "py-basic"
    fi
fi

echo "== differential: the Copilot CLI (reference) and turnstile, same scenarios"
REFERENCE=$NODE_DIR/node_modules/@github/copilot-linux-x64/copilot
if [ -x "$REFERENCE" ] && "$REFERENCE" --version >/dev/null 2>&1; then
    "$REFERENCE" --version | head -1
    node --test conformance/ts/differential/selftest.mjs > "$OUT/differential-selftest.log" 2>&1 \
        || { cat "$OUT/differential-selftest.log"; fail "differential-selftest"; }
    node conformance/ts/differential/main.mjs "$@" || fail "differential"
else
    echo "SKIP differential: the Copilot CLI (npm @github/copilot) is not installed at $REFERENCE"
fi

if [ "$failed" -ne 0 ]; then
    echo "conformance: FAILED:$failed_parts"
    exit 1
fi
echo "conformance: all scenarios passed"
