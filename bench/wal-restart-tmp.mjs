// Writes at a steady rate on a store with 1M done records; phase A without, phase B with the console's
// overview opened back to back. Reports WAL file size max, event-loop gaps, slowest claim+complete.
import { SqliteDedupStore } from '@email-webhooks/core/sqlite'
import { emailWebhookConsole } from '@email-webhooks/core/console'
import { copyFileSync, statSync, rmSync } from 'node:fs'
import { randomUUID } from 'node:crypto'
const path = `/tmp/rr/wal-${process.pid}.db`
copyFileSync(process.env.SRC ?? '/tmp/rr/backlog.db', path)
const warnings = []
const store = new SqliteDedupStore({ path, warn: (m) => warnings.push(m) })
const handler = emailWebhookConsole({ store, auth: { username: 'ops', password: 'pw-pw-pw-pw-pw' } })
const AUTH = { authorization: `Basic ${btoa('ops:pw-pw-pw-pw-pw')}` }
const OPTS = { leaseMs: 60000, retentionMs: 3600000 }
const PER_TICK = Number(process.env.PER_TICK ?? 4)
async function phase(name, ms, withConsole) {
  let walMax = 0, last = performance.now(), gaps = [], slowest = 0, events = 0, pages = 0, stop = false
  const sampler = setInterval(() => { try { walMax = Math.max(walMax, statSync(path + '-wal').size) } catch {} }, 10)
  const loop = setInterval(() => { const now = performance.now(); gaps.push(now - last); last = now }, 1)
  const writer = setInterval(() => {
    for (let i = 0; i < PER_TICK; i++) {
      const t0 = performance.now()
      store.claim('default:' + randomUUID(), OPTS).then((c) => store.complete(c.claim, OPTS)).then(() => { slowest = Math.max(slowest, performance.now() - t0); events++ })
    }
  }, 1)
  const consoleLoop = withConsole ? (async () => { while (!stop) { if (process.env.MODE === 'stats') { await store.inbox.stats(); pages++; await new Promise((r) => setTimeout(r, Number(process.env.GAP ?? 0))); continue } const r = await handler(new Request('http://c/', { headers: AUTH })); await r.text(); pages++ } })() : Promise.resolve()
  await new Promise((r) => setTimeout(r, ms))
  stop = true; clearInterval(writer); await consoleLoop; clearInterval(loop); clearInterval(sampler)
  gaps.sort((a, b) => a - b)
  const p = (q) => gaps[Math.floor(q * (gaps.length - 1))].toFixed(1)
  console.log(`${name}: events ${events}, pages ${pages}, WAL max ${(walMax / 1048576).toFixed(1)} MiB, loop gap p99 ${p(0.99)} max ${p(1)} ms, gaps>20ms ${gaps.filter((g) => g > 20).length}, slowest claim+complete ${slowest.toFixed(1)} ms`)
}
await phase('warm-up', 3000, false)
for (let i = 0; i < Number(process.env.ROUNDS ?? 2); i++) {
  await phase('A without console', 8000, false)
  await phase('B overview back-to-back', 8000, true)
}
await store.close()
console.log('warnings:', warnings.length, warnings.map((w) => w.slice(0, 160)))
for (const s of ['', '-wal', '-shm']) rmSync(path + s, { force: true })
