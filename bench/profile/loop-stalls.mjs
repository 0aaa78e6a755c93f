/**
 * The event loop's longest stalls under the SQLite store (issue 48): claims + completes on a new
 * file for SECS seconds (default 5); prints events/s, the process's CPU µs per event (all its
 * threads; and the event loop's thread alone, from /proc), the claim's p99 and slowest, the whole
 * event's (claim to synced complete) p99 and slowest, and the loop's delay p99 and max
 * (monitorEventLoopDelay). By default 20 lanes back to back; RATE=<events/s> sends at that pace
 * instead (open loop, each event timed from when it was due), as a receiver sees its traffic.
 * Knobs for the WAL checkpoint, each an experiment: NOWORKER=1 (the store's checkpointer thread
 * cannot start, so the writing connection checkpoints on the event loop, as before issue 48's
 * checkpointer), NOCKPT=1 (nobody checkpoints), AUTO=<pages> (the connection's wal_autocheckpoint).
 *
 *   node bench/profile/loop-stalls.mjs
 *   RATE=8000 NOWORKER=1 node bench/profile/loop-stalls.mjs
 *
 * Build first (`npx -y pnpm@12 build`).
 */

import { mkdtempSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { monitorEventLoopDelay, performance } from 'node:perf_hooks'

const require = createRequire(join(process.cwd(), 'packages/core/package.json'))
const Database = require('better-sqlite3')
const AUTO = process.env.AUTO
// Every wal_autocheckpoint the store sets becomes this one (0: never).
const forcedPages = process.env.NOCKPT ? '0' : AUTO
if (forcedPages !== undefined) {
  const pragma = Database.prototype.pragma
  Database.prototype.pragma = function (s, o) {
    return pragma.call(this, s.startsWith('wal_autocheckpoint') ? `wal_autocheckpoint = ${forcedPages}` : s, o)
  }
}
if (process.env.NOWORKER || process.env.NOCKPT) {
  const threads = require('node:worker_threads')
  threads.Worker = class {
    constructor() {
      throw new Error('NOWORKER')
    }
  }
  require('node:module').syncBuiltinESMExports()
}
const { SqliteDedupStore } = await import('@email-webhooks/core/sqlite')
const dir = mkdtempSync(join(tmpdir(), 'stall-'))
// With the thread kept from starting on purpose, the store's warning that it stopped says nothing new.
const store = new SqliteDedupStore({
  path: join(dir, 'db.sqlite'),
  warn: process.env.NOWORKER || process.env.NOCKPT ? () => {} : undefined,
})
const h = monitorEventLoopDelay({ resolution: 1 })
h.enable()
const cpuBefore = process.cpuUsage()
/** CPU of the main thread alone (the event loop), in µs: utime + stime of its task, in clock ticks (100 a second). */
const { readFileSync: readStat } = await import('node:fs')
const mainCpuUs = () => {
  const fields = readStat(`/proc/self/task/${process.pid}/stat`, 'utf8').split(') ')[1].split(' ')
  return (Number(fields[11]) + Number(fields[12])) * 10_000
}
const mainBefore = mainCpuUs()
const lat = []
const whole = []
const SECS = Number(process.env.SECS ?? 5)
const RATE = Number(process.env.RATE ?? 0)
const end = performance.now() + SECS * 1000
const options = { leaseMs: 30000, retentionMs: 7 * 864e5 }
let n = 0
/** One event: claim, then complete; timed from `due`. */
async function event(due) {
  const c = await store.claim(`default:${crypto.randomUUID()}`, options)
  lat.push(performance.now() - due)
  await store.complete(c.claim, options)
  whole.push(performance.now() - due)
  n++
}
if (RATE > 0) {
  // Each millisecond tick sends the events due by then; a late tick sends them late (timed from when they were due).
  const started = performance.now()
  const running = []
  let sent = 0
  await new Promise((resolve) => {
    const tick = setInterval(() => {
      const now = performance.now()
      if (now >= end) {
        clearInterval(tick)
        resolve()
        return
      }
      const due = Math.floor(((now - started) / 1000) * RATE)
      for (; sent < due; sent++) running.push(event(started + (sent / RATE) * 1000))
    }, 1)
  })
  await Promise.all(running)
} else {
  await Promise.all(
    Array.from({ length: 20 }, async () => {
      while (performance.now() < end) await event(performance.now())
    }),
  )
}
h.disable()
const cpu = process.cpuUsage(cpuBefore)
const mainCpu = mainCpuUs() - mainBefore
const { statSync } = await import('node:fs')
const walMiB = (statSync(join(dir, 'db.sqlite-wal')).size / 2 ** 20).toFixed(1)
lat.sort((a, b) => a - b)
whole.sort((a, b) => a - b)
console.log(
  JSON.stringify({
    worker: !process.env.NOWORKER && !process.env.NOCKPT,
    nockpt: !!process.env.NOCKPT,
    auto: AUTO,
    rate: RATE || undefined,
    walMiB,
    perSec: Math.round(n / SECS),
    cpuUsPerEvent: ((cpu.user + cpu.system) / n).toFixed(1),
    sysUsPerEvent: (cpu.system / n).toFixed(1),
    loopThreadUsPerEvent: (mainCpu / n).toFixed(1),
    claimP99: lat[Math.floor(lat.length * 0.99)].toFixed(2),
    claimMax: lat.at(-1).toFixed(1),
    eventP99: whole[Math.floor(whole.length * 0.99)].toFixed(2),
    eventMax: whole.at(-1).toFixed(1),
    loopMaxMs: (h.max / 1e6).toFixed(1),
    loopP99Ms: (h.percentile(99) / 1e6).toFixed(1),
  }),
)
await store.close()
