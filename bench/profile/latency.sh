#!/usr/bin/env bash
# Answer latency of one variant of server.mjs and where its answers wait: cpu.sh's run (server on
# core 0, load on core 1, 20,000 requests of warm-up, then COUNT, default 60,000) with STATS=1
# (stats.mjs: event loop delay, the WAL's fdatasyncs, statements over 2 ms). The counters wrap
# every statement, so the CPU per request it prints is higher than cpu.sh's alone. NOCKPT=1 passes on.
# usage: bench/profile/latency.sh <variant> [count]
set -euo pipefail
STATS=1 exec "$(dirname "$0")/cpu.sh" "$1" "${2:-60000}"
