/**
 * `node console-wal.mjs <file>`: whether the SQLite store's WAL still starts over while the console
 * reads. A copy of `file` (a store file, e.g. filled by fill-sqlite.mjs) takes claim + complete at a
 * steady rate (PER_TICK events every millisecond, default 4), in phases of PHASE_MS (default 8,000):
 * without the console, then with its overview opened back to back in this process, ROUNDS times
 * (default 2). Each phase prints the WAL file's largest size (the store restarts it at 4 MiB; 12 MiB
 * is the backstop, where the store checkpoints on the event loop), the event loop's longest gaps and
 * the slowest claim + complete. First written by a reviewer of issue 48's console change.
 */
import { randomUUID } from 'node:crypto'
import { copyFileSync, rmSync, statSync } from 'node:fs'
import { emailWebhookConsole } from '@email-webhooks/core/console'
import { SqliteDedupStore } from '@email-webhooks/core/sqlite'

const source = process.argv[2]
if (!source) {
  console.error('usage: node console-wal.mjs <store file>')
  process.exit(2)
}
const PER_TICK = Number(process.env.PER_TICK ?? 4)
const PHASE_MS = Number(process.env.PHASE_MS ?? 8_000)
const ROUNDS = Number(process.env.ROUNDS ?? 2)
const path = `${source}.console-wal-${process.pid}.db`
copyFileSync(source, path)
const warnings = []
const store = new SqliteDedupStore({ path, warn: (message) => warnings.push(message) })
const auth = { username: 'ops', password: 'profile-console-password' }
const handler = emailWebhookConsole({ store, auth })
const headers = { authorization: `Basic ${btoa(`${auth.username}:${auth.password}`)}` }
const OPTS = { leaseMs: 60_000, retentionMs: 3_600_000 }

async function phase(name, withConsole) {
  let walMax = 0
  let last = performance.now()
  const gaps = []
  let slowest = 0
  let events = 0
  let failed = 0
  let pages = 0
  let stop = false
  const sampler = setInterval(() => {
    try {
      walMax = Math.max(walMax, statSync(`${path}-wal`).size)
    } catch {}
  }, 10)
  const loop = setInterval(() => {
    const now = performance.now()
    gaps.push(now - last)
    last = now
  }, 1)
  const writer = setInterval(() => {
    for (let i = 0; i < PER_TICK; i++) {
      const started = performance.now()
      store
        .claim(`default:${randomUUID()}`, OPTS)
        .then((claimed) => store.complete(claimed.claim, OPTS))
        .then(
          () => {
            slowest = Math.max(slowest, performance.now() - started)
            events++
          },
          // A store that failed a call, or one closed while a call of the last phase was queued.
          () => failed++,
        )
    }
  }, 1)
  const reading = withConsole
    ? (async () => {
        while (!stop) {
          await (await handler(new Request('http://profile/', { headers }))).text()
          pages++
        }
      })()
    : Promise.resolve()
  await new Promise((resolve) => setTimeout(resolve, PHASE_MS))
  stop = true
  clearInterval(writer)
  await reading
  clearInterval(loop)
  clearInterval(sampler)
  gaps.sort((a, b) => a - b)
  const at = (q) => (gaps[Math.floor(q * (gaps.length - 1))] ?? 0).toFixed(1)
  console.log(
    `${name}: ${events} events, ${pages} overviews, WAL max ${(walMax / 2 ** 20).toFixed(1)} MiB, event loop gap p99 ${at(0.99)} ms, max ${at(1)} ms, ${gaps.filter((gap) => gap > 20).length} over 20 ms, slowest claim + complete ${slowest.toFixed(1)} ms, ${failed} failed`,
  )
}

try {
  await phase('warm-up', false)
  for (let round = 0; round < ROUNDS; round++) {
    await phase('without the console', false)
    await phase('overview back to back', true)
  }
} finally {
  await store.close()
  for (const suffix of ['', '-wal', '-shm']) rmSync(path + suffix, { force: true })
}
if (warnings.length > 0) console.log(`warnings: ${warnings.join(' | ')}`)
