#!/usr/bin/env bash
# Builds and packs agent-loop-guard, installs the tarball into examples/first-agent,
# examples/own-agent, examples/ai-sdk-agent, examples/openai-agents, examples/strands-agents,
# examples/approval-twin and examples/conversation, starts a throwaway Temporal dev server on free ports, runs the examples
# against it, reads a run back with the packaged agentctl, writes a new app with the packaged
# `agentctl init` (.pack/init-app), runs its own test and runs it to COMPLETED, and stops
# everything. Exits non-zero when any step fails or when a run did not end as its example
# expects. `.ci/run` runs it after the tests.
#
# The tarball is installed the way npm lays a package out (node_modules/agent-loop-guard is
# the tarball's package/ folder), and Node resolves the package's own dependencies from the
# repository's node_modules (the versions of package-lock.json), so the run downloads nothing
# more. test/package/pack.test.ts checks that everything dist/ requires is a declared
# dependency, which is what that shortcut would otherwise hide. EXAMPLE_NPM_INSTALL=1 runs a
# real `npm install` from the registry in each example instead (no native build: SQLite is
# Node's own `node:sqlite`).
#
# Environment: TEMPORAL_CLI (default: scripts/temporal-cli.ts finds or installs it).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
EXAMPLE="$ROOT/examples/first-agent"
PACK_DIR="$ROOT/.pack"
cd "$ROOT"

step() { printf '\n--- %s (%d s in)\n' "$*" "$SECONDS"; }

step "build and pack (Node $(node --version))"
npm run -s build
rm -rf "$PACK_DIR" && mkdir -p "$PACK_DIR"
tarball="$(npm pack --ignore-scripts --silent --pack-destination "$PACK_DIR" | tail -n 1)"
mv "$PACK_DIR/$tarball" "$PACK_DIR/agent-loop-guard.tgz"
echo "$tarball ($(du -k "$PACK_DIR/agent-loop-guard.tgz" | cut -f1) kB)"

OWN="$ROOT/examples/own-agent"
AISDK="$ROOT/examples/ai-sdk-agent"
OPENAI_AGENTS="$ROOT/examples/openai-agents"
STRANDS_AGENTS="$ROOT/examples/strands-agents"
TWIN="$ROOT/examples/approval-twin"
CONV="$ROOT/examples/conversation"
for app in "$EXAMPLE" "$OWN" "$AISDK" "$OPENAI_AGENTS" "$STRANDS_AGENTS" "$TWIN" "$CONV"; do
  step "install the tarball into ${app#"$ROOT/"}"
  if [ "${EXAMPLE_NPM_INSTALL:-}" = 1 ]; then
    (cd "$app" && npm install --no-audit --no-fund --no-package-lock < /dev/null)
  else
    rm -rf "$app/node_modules"
    mkdir -p "$app/node_modules/agent-loop-guard" "$app/node_modules/.bin"
    tar -xzf "$PACK_DIR/agent-loop-guard.tgz" -C "$app/node_modules/agent-loop-guard" --strip-components=1
    ln -s ../agent-loop-guard/bin/agentctl.js "$app/node_modules/.bin/agentctl"
  fi
done
bin_of() { if [ -x "$EXAMPLE/node_modules/.bin/$1" ]; then echo "$EXAMPLE/node_modules/.bin/$1"; else echo "$ROOT/node_modules/.bin/$1"; fi; }
TSX="$(bin_of tsx)"
TSC="$(bin_of tsc)"

step "typecheck the examples against the package's types"
"$TSC" -p "$EXAMPLE"
"$TSC" -p "$OWN"
"$TSC" -p "$AISDK"
"$TSC" -p "$OPENAI_AGENTS"
"$TSC" -p "$STRANDS_AGENTS"
"$TSC" -p "$TWIN"
"$TSC" -p "$CONV"

step "Temporal dev server"
TEMPORAL_CLI="${TEMPORAL_CLI:-$(npx --no-install tsx scripts/temporal-cli.ts install < /dev/null | tail -n 1)}"
free_port() { node -e "const s=require('net').createServer();s.listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})"; }
PORT="$(free_port)"
ADDRESS="127.0.0.1:$PORT"
# No --search-attribute flags: the example's worker registers the ones it needs itself.
"$TEMPORAL_CLI" server start-dev --headless --ip 127.0.0.1 --port "$PORT" --namespace default \
  --log-level error > "$ROOT/.pack/temporal.log" 2>&1 &
SERVER_PID=$!
cleanup() {
  if [ -n "${APP_WORKER:-}" ]; then kill "$APP_WORKER" 2> /dev/null || true; fi
  kill "$SERVER_PID" 2> /dev/null || true
  wait "$SERVER_PID" 2> /dev/null || true
}
trap cleanup EXIT
trap 'exit 143' TERM INT # so that a timeout or Ctrl-C still runs cleanup (the EXIT trap)
for _ in $(seq 1 60); do
  "$TEMPORAL_CLI" operator cluster health --address "$ADDRESS" > /dev/null 2>&1 && break
  kill -0 "$SERVER_PID" 2> /dev/null || { cat "$ROOT/.pack/temporal.log" >&2; exit 1; }
  sleep 0.5
done
"$TEMPORAL_CLI" operator cluster health --address "$ADDRESS"

step "run the example"
RUN_ID="first-agent-$$"
(cd "$EXAMPLE" && TEMPORAL_ADDRESS="$ADDRESS" RUN_ID="$RUN_ID" timeout 120 "$TSX" src/main.ts)

step "find the run with the packaged agentctl (by the search attributes the worker registered)"
# `list` reads visibility, so it needs no worker (a query to a closed run would wait for one).
listed="$(cd "$EXAMPLE" && TEMPORAL_ADDRESS="$ADDRESS" "$EXAMPLE/node_modules/.bin/agentctl" list --reason same_call_repeat)"
echo "$listed"
grep -q "^$RUN_ID " <<< "$listed" || { echo "agentctl list did not show $RUN_ID" >&2; exit 1; }

step "run examples/own-agent: own store and tools, no demo parts"
(cd "$OWN" && TEMPORAL_ADDRESS="$ADDRESS" timeout 120 "$TSX" src/main.ts)

step "run examples/ai-sdk-agent: a @temporalio/ai-sdk agent with the guard added, a worker killed mid-write settled by its probe, npx agentctl stop and resume"
(cd "$AISDK" && TEMPORAL_ADDRESS="$ADDRESS" TSX="$TSX" AGENTCTL="$AISDK/node_modules/.bin/agentctl" timeout 240 "$TSX" src/main.ts)

step "run examples/openai-agents: a @temporalio/openai-agents agent with the guard added, a worker killed after its payment, approval twins"
(cd "$OPENAI_AGENTS" && TEMPORAL_ADDRESS="$ADDRESS" TSX="$TSX" AGENTCTL="$OPENAI_AGENTS/node_modules/.bin/agentctl" timeout 240 "$TSX" src/main.ts)

step "run examples/strands-agents: a @temporalio/strands-agents agent with the guard added, a worker killed after its payment, timeouts and a re-plan, an approval twin, agentctl stop and resume"
(cd "$STRANDS_AGENTS" && TEMPORAL_ADDRESS="$ADDRESS" TSX="$TSX" AGENTCTL="$STRANDS_AGENTS/node_modules/.bin/agentctl" timeout 240 "$TSX" src/main.ts)

step "run examples/approval-twin: the approval twin attack through npx agentctl, 10 rounds"
# Its agentctl calls are `npx --no-install agentctl …` processes, as a user types them.
(cd "$TWIN" && TEMPORAL_ADDRESS="$ADDRESS" timeout 240 "$TSX" src/main.ts)

step "run examples/conversation: a conversation run through npx agentctl start --conversation, status, send, replies"
(cd "$CONV" && TEMPORAL_ADDRESS="$ADDRESS" timeout 90 "$TSX" src/main.ts)

step "agentctl init: a new app from the packed agentctl, its own two tools, its own test, an LLM run that finishes with the built-in complete_task"
APP="$PACK_DIR/init-app"
rm -rf "$APP"
"$EXAMPLE/node_modules/.bin/agentctl" init "$APP" --package "file:../agent-loop-guard.tgz"
mkdir -p "$APP/node_modules/agent-loop-guard"
tar -xzf "$PACK_DIR/agent-loop-guard.tgz" -C "$APP/node_modules/agent-loop-guard" --strip-components=1
"$TSC" -p "$APP"
# The app's own test (src/agent.test.ts, its `npm test`): its tools under agent-loop-guard/testing on this server.
(cd "$APP" && TEMPORAL_TEST_ADDRESS="$ADDRESS" timeout 180 "$TSX" --test "src/**/*.test.ts")
(cd "$APP" && TEMPORAL_ADDRESS="$ADDRESS" exec "$TSX" src/worker.ts > "$PACK_DIR/init-app-worker.log" 2>&1) &
APP_WORKER=$!
app_out="$(cd "$APP" && TEMPORAL_ADDRESS="$ADDRESS" timeout 120 "$TSX" src/start.ts)" || {
  echo "$app_out"
  cat "$PACK_DIR/init-app-worker.log" >&2
  kill "$APP_WORKER" 2> /dev/null || true
  exit 1
}
kill -INT "$APP_WORKER" 2> /dev/null || true
wait "$APP_WORKER" 2> /dev/null || true
APP_WORKER=
echo "$app_out"
grep -q '^COMPLETED: emailed ann@example.com' <<< "$app_out" || { echo "the init app's run did not complete" >&2; exit 1; }
[ "$(wc -l < "$APP/data/outbox.jsonl")" -eq 1 ] || { echo "send_email did not run exactly once" >&2; exit 1; }

step "examples OK"
