#!/usr/bin/env bash
# Installs the MCP servers from outside turnstile that its tests run against (today the
# reference @modelcontextprotocol/server-everything) into target/mcp-servers, pinned by
# conformance/mcp/package-lock.json. The install is skipped while its stamp matches, and npm's
# cache lives beside it, so the tests run offline afterwards.
set -euo pipefail
cd "$(dirname "$0")/../.."
command -v npm >/dev/null || { echo "mcp servers: npm is required" >&2; exit 2; }
DIR=target/mcp-servers
STAMP=$(cat conformance/mcp/package.json conformance/mcp/package-lock.json | sha256sum | cut -d' ' -f1)
if [ "$(cat "$DIR/.stamp" 2>/dev/null)" = "$STAMP" ] && [ -d "$DIR/node_modules/@modelcontextprotocol/server-everything" ]; then
    echo "mcp servers: installed (stamp matches; no network needed)"
    exit 0
fi
mkdir -p "$DIR"
cp conformance/mcp/package.json conformance/mcp/package-lock.json "$DIR/"
npm ci --prefix "$DIR" --no-audit --no-fund --cache "$PWD/$DIR/npm-cache" --prefer-offline
echo "$STAMP" > "$DIR/.stamp"
echo "mcp servers: installed into $DIR"
