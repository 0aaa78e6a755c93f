/**
 * The event loop's longest stalls under the SQLite store (issue 48): 20 claim + complete lanes on a
 * new file for SECS seconds (default 5); prints events/s, claim p99 and slowest, and the loop's
 * delay p99 and max (monitorEventLoopDelay). Knobs for the WAL checkpoint, each an experiment:
 * NOCKPT=1 (the connection never checkpoints), AUTO=<pages> (its wal_autocheckpoint), BG=<ms> (a
 * second connection in a worker thread runs a PASSIVE checkpoint every BG ms).
 *
 *   node bench/profile/loop-stalls.mjs
 *   NOCKPT=1 node bench/profile/loop-stalls.mjs
 *   AUTO=16384 BG=100 node bench/profile/loop-stalls.mjs
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
if (AUTO) {
  const pragma = Database.prototype.pragma
  Database.prototype.pragma = function (s, o) {
    return pragma.call(this, s.startsWith('wal_autocheckpoint') ? `wal_autocheckpoint = ${AUTO}` : s, o)
  }
}
if (process.env.NOCKPT) {
  const pragma = Database.prototype.pragma
  Database.prototype.pragma = function (s, o) {
    return pragma.call(this, s.startsWith('wal_autocheckpoint') ? 'wal_autocheckpoint = 0' : s, o)
  }
}
const { SqliteDedupStore } = await import('@email-webhooks/core/sqlite')
const dir = mkdtempSync(join(tmpdir(), 'stall-'))
const store = new SqliteDedupStore({ path: join(dir, 'db.sqlite') })
let bg
if (process.env.BG) {
  const { Worker } = await import('node:worker_threads')
  bg = new Worker(
    `
    const { workerData, parentPort } = require('node:worker_threads')
    const Database = require(workerData.driver)
    const db = new Database(workerData.path, { timeout: 0 })
    db.pragma('wal_autocheckpoint = 0')
    let n = 0, copied = 0
    const t = setInterval(() => { try { const r = db.pragma('wal_checkpoint(PASSIVE)')[0]; n++; copied = r.checkpointed } catch {} }, Number(workerData.every))
    parentPort.on('message', () => { clearInterval(t); parentPort.postMessage({ n }); db.close(); })
  `,
    { eval: true, workerData: { driver: require.resolve('better-sqlite3'), path: join(dir, 'db.sqlite'), every: process.env.BG } },
  )
}
const h = monitorEventLoopDelay({ resolution: 1 })
h.enable()
const lat = []
const end = performance.now() + Number(process.env.SECS ?? 5) * 1000
let n = 0
await Promise.all(
  Array.from({ length: 20 }, async () => {
    while (performance.now() < end) {
      const t = performance.now()
      const c = await store.claim(`default:${crypto.randomUUID()}`, { leaseMs: 30000, retentionMs: 7 * 864e5 })
      lat.push(performance.now() - t)
      await store.complete(c.claim, { retentionMs: 7 * 864e5 })
      n++
    }
  }),
)
h.disable()
let bgInfo
if (bg) {
  bg.postMessage('stop')
  bgInfo = await new Promise((r) => bg.once('message', r))
  await bg.terminate()
}
const { statSync } = await import('node:fs')
const walMiB = (statSync(join(dir, 'db.sqlite-wal')).size / 2 ** 20).toFixed(1)
lat.sort((a, b) => a - b)
console.log(
  JSON.stringify({
    nockpt: !!process.env.NOCKPT,
    auto: AUTO,
    bg: process.env.BG,
    bgInfo,
    walMiB,
    perSec: Math.round(n / Number(process.env.SECS ?? 5)),
    claimP99: lat[Math.floor(lat.length * 0.99)].toFixed(2),
    claimMax: lat.at(-1).toFixed(1),
    loopMaxMs: (h.max / 1e6).toFixed(1),
    loopP99Ms: (h.percentile(99) / 1e6).toFixed(1),
  }),
)
await store.close()
