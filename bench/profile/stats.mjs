/**
 * STATS=1 for server.mjs: where a SQLite server's answers wait (issue 48). Counts, from SIGUSR2 to
 * SIGINT, the event loop's delay (monitorEventLoopDelay), every `fdatasync` of the process's event
 * loop (the store's WAL syncs: how many, how long), and every better-sqlite3 statement or pragma
 * slower than 2 ms (grouped by its SQL: a checkpoint shows as a slow COMMIT). NOCKPT=1 besides:
 * nobody checkpoints the WAL (no checkpointer thread, wal_autocheckpoint 0), the floor of what
 * checkpoints cost. Installed before the store is made.
 */
import fs from 'node:fs'
import { createRequire, syncBuiltinESMExports } from 'node:module'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import threads from 'node:worker_threads'
import { timeStatements } from './sql-timing.mjs'

const SLOW_MS = 2

/** Installs the counters; returns reset() and report(requests). */
export function installStats() {
  const loop = monitorEventLoopDelay({ resolution: 1 })
  loop.enable()
  let syncs = []
  let slow = new Map()
  const noteSlow = (ms, what) => {
    if (ms > SLOW_MS) slow.set(what, [...(slow.get(what) ?? []), ms])
  }
  const fdatasync = fs.fdatasync
  fs.fdatasync = (fd, done) => {
    const started = performance.now()
    fdatasync(fd, (error) => {
      syncs.push(performance.now() - started)
      done(error)
    })
  }
  if (process.env.NOCKPT) {
    threads.Worker = class {
      constructor() {
        throw new Error('NOCKPT: no checkpointer thread')
      }
    }
  }
  syncBuiltinESMExports()
  const Database = createRequire(new URL('../../packages/core/package.json', import.meta.url))('better-sqlite3')
  timeStatements(Database, (ms, sql) => noteSlow(ms, sql.slice(0, 120)))
  const pragma = Database.prototype.pragma
  Database.prototype.pragma = function (source, options) {
    const started = performance.now()
    const asked = process.env.NOCKPT && source.startsWith('wal_autocheckpoint') ? 'wal_autocheckpoint = 0' : source
    try {
      return pragma.call(this, asked, options)
    } finally {
      noteSlow(performance.now() - started, `pragma ${asked}`)
    }
  }
  return {
    reset() {
      loop.reset()
      syncs = []
      slow = new Map()
    },
    report(requests) {
      const ms = (ns) => (ns / 1e6).toFixed(2)
      const sorted = syncs.sort((a, b) => a - b)
      const at = (p) => (sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? 0).toFixed(2)
      console.error(`  event loop delay p50 ${ms(loop.percentile(50))} ms, p99 ${ms(loop.percentile(99))} ms, max ${ms(loop.max)} ms`)
      console.error(
        `  fdatasync ${sorted.length} (${(requests / Math.max(1, sorted.length)).toFixed(1)} requests each), p50 ${at(50)} ms, p99 ${at(99)} ms, max ${at(100)} ms`,
      )
      for (const [what, times] of slow)
        console.error(`  over ${SLOW_MS} ms ${times.length}×, slowest ${Math.max(...times).toFixed(1)} ms: ${what}`)
    },
  }
}
