#!/usr/bin/env bash
# Answer latency of one variant of server.mjs and where its answers wait: the server pinned to core
# 0 with STATS=1 (stats.mjs: event loop delay, the WAL's fdatasyncs, statements over 2 ms), the
# load on core 1, a warm-up of 20,000 requests, then COUNT (default 60,000) measured. The counters
# wrap every statement, so the CPU per request it prints is higher than cpu.sh's. NOCKPT=1 passes on.
# usage: bench/profile/latency.sh <variant> [count]
set -euo pipefail
cd "$(dirname "$0")"
variant=$1
count=${2:-60000}
port_file=$(mktemp)
STATS=1 taskset -c 0 node server.mjs "$variant" >"$port_file" &
pid=$!
for _ in $(seq 100); do [ -s "$port_file" ] && break; sleep 0.1; done
port=$(cat "$port_file")
rm -f "$port_file"
echo "warm-up: $(taskset -c 1 node load.mjs "$port" 20000)"
kill -USR2 "$pid"
taskset -c 1 node load.mjs "$port" "$count"
kill -INT "$pid"
wait "$pid" || true
