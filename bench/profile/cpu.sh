#!/usr/bin/env bash
# CPU µs per request of one variant of server.mjs: the server pinned to core 0, the load to core 1,
# a warm-up of 20,000 requests, then COUNT (default 100,000) measured: the server's CPU from the
# end of the warm-up (SIGUSR2) to the end, divided by the requests it received in that window.
# The server's environment passes on (latency.sh sets STATS=1).
# usage: bench/profile/cpu.sh <variant> [count]
set -euo pipefail
cd "$(dirname "$0")"
variant=$1
count=${2:-100000}
port_file=$(mktemp)
taskset -c 0 node server.mjs "$variant" >"$port_file" &
pid=$!
for _ in $(seq 100); do [ -s "$port_file" ] && break; sleep 0.1; done
port=$(cat "$port_file")
rm -f "$port_file"
echo "warm-up: $(taskset -c 1 node load.mjs "$port" 20000)"
kill -USR2 "$pid"
taskset -c 1 node load.mjs "$port" "$count"
kill -INT "$pid"
wait "$pid" || true
