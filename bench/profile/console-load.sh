#!/usr/bin/env bash
# Webhook answers' latency while an operator opens the console: a store file pre-filled with
# RECORDS done records (default 1,000,000), the Hono server with the default SQLite store on it
# pinned to core 0, the load on core 1: a warm-up of 20,000 requests (closed loop), then RATE
# deliveries a second (default 3,000, about half of what one core answers this way) for SECONDS (default
# 10) in an open loop (rate.mjs: latency from when each delivery was due). Once without the console
# and once with its overview opened every EVERY_MS (default 1,000) in the server's process.
# usage: bench/profile/console-load.sh
set -euo pipefail
cd "$(dirname "$0")"
records=${RECORDS:-1000000}
every=${EVERY_MS:-1000}
rate=${RATE:-3000}
seconds=${SECONDS_:-10}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
for mode in without with; do
  rm -f "$dir"/dedup.db*
  node fill-sqlite.mjs "$dir/dedup.db" "$records" >/dev/null
  port_file=$(mktemp)
  if [ "$mode" = with ]; then console_every=$every; else console_every=0; fi
  EMAIL_WEBHOOKS_DB="$dir/dedup.db" CONSOLE_EVERY_MS=$console_every taskset -c 0 node server.mjs sqlite >"$port_file" 2>"$dir/server.err" &
  pid=$!
  for _ in $(seq 100); do [ -s "$port_file" ] && break; sleep 0.1; done
  port=$(cat "$port_file")
  rm -f "$port_file"
  taskset -c 1 node load.mjs "$port" 20000 >/dev/null
  kill -USR2 "$pid"
  echo "console $mode: $(taskset -c 1 node rate.mjs "$port" "$rate" "$seconds")"
  kill -INT "$pid"
  wait "$pid" || true
  grep -v "^\[@email-webhooks" "$dir/server.err" | sed 's/^/  server: /' || true
done
