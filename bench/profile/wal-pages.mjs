/**
 * What the SQLite store's WAL carries per event, by table (issue 48: why inbox mode's answers wait
 * on checkpoints more than request mode's): signed events through a receiver in `request` or
 * `inbox` mode (the inbox drained after every 10, as a worker in the process keeps it), first
 * `warm` events to give the tables a size, then as many as fill one checkpoint interval (4 MiB of
 * WAL, where the store restarts it). Checkpoints are off for the measurement (`wal_autocheckpoint`
 * 0, no checkpointer thread), so the WAL holds every frame written in it. Prints frames per event,
 * distinct pages per event (what a checkpoint copies into the database file and syncs) and the
 * frames and distinct pages by table or index (SQLite's `dbstat`: overflow pages count with their table).
 *
 *   node bench/profile/wal-pages.mjs <request|inbox> [warm=20000]
 *
 * Build first (`npx -y pnpm@12 build`).
 */
import { mkdtempSync, readFileSync, statSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const mode = process.argv[2]
const warm = Number(process.argv[3] ?? 20_000)
if ((mode !== 'request' && mode !== 'inbox') || !Number.isInteger(warm)) {
  console.error('usage: node bench/profile/wal-pages.mjs <request|inbox> [warm]')
  process.exit(2)
}
const require = createRequire(join(process.cwd(), 'packages/core/package.json'))
const Database = require('better-sqlite3')
// No checkpoint: every wal_autocheckpoint the store sets becomes 0, and its checkpointer thread cannot start.
const pragma = Database.prototype.pragma
Database.prototype.pragma = function (source, options) {
  return pragma.call(this, source.startsWith('wal_autocheckpoint') ? 'wal_autocheckpoint = 0' : source, options)
}
const threads = require('node:worker_threads')
threads.Worker = class {
  constructor() {
    throw new Error('no checkpointer thread in this measurement')
  }
}
require('node:module').syncBuiltinESMExports()

const { createInboxWorker, createReceiver } = await import('@email-webhooks/core')
const { SqliteDedupStore } = await import('@email-webhooks/core/sqlite')
const { createSignedDelivery, TEST_SECRET } = await import('@email-webhooks/core/testing')

const INTERVAL_BYTES = 4 * 1024 * 1024
const MAX_MEASURED = 10_000
const path = join(mkdtempSync(join(tmpdir(), 'wal-pages-')), 'db.sqlite')
const store = new SqliteDedupStore({ path, warn: () => {} })
const handlers = { 'email.bounced': () => {} }
const receiver = createReceiver({
  secret: TEST_SECRET,
  store,
  logger: false,
  mode,
  ...(mode === 'inbox' ? { inbox: { worker: false } } : {}),
  handlers,
})
const worker = mode === 'inbox' ? createInboxWorker({ store, handlers }) : undefined

async function events(count) {
  for (let sent = 0; sent < count; sent += 10) {
    const batch = await Promise.all(
      Array.from({ length: 10 }, () => createSignedDelivery({ type: 'email.bounced', data: { email_id: crypto.randomUUID() } })),
    )
    const answers = await Promise.all(batch.map((delivery) => receiver.receive({ headers: delivery.headers, body: delivery.body })))
    for (const answer of answers) if (answer.status >= 300) throw new Error(`answered ${answer.status}`)
    if (worker) await worker.drain()
  }
}

await events(warm)
const side = new Database(path)
side.pragma('wal_checkpoint(TRUNCATE)')
const pageSize = side.pragma('page_size', { simple: true })
const frameBytes = 24 + pageSize
const walFrames = () => Math.max(0, (statSync(`${path}-wal`, { throwIfNoEntry: false })?.size ?? 32) - 32) / frameBytes
let measured = 0
while (walFrames() * pageSize < INTERVAL_BYTES && measured < MAX_MEASURED) {
  await events(10)
  measured += 10
}
const wal = readFileSync(`${path}-wal`)
const frames = (wal.length - 32) / frameBytes
const written = []
for (let frame = 0; frame < frames; frame++) written.push(wal.readUInt32BE(32 + frame * frameBytes))
const pages = new Set(written)
const owner = new Map(side.prepare('SELECT pageno, name FROM dbstat').raw().all())
/** Per table or index: [frames, distinct pages]. */
const byTable = new Map()
const count = (page, slot) => {
  const name = owner.get(page) ?? '(freelist)'
  const counts = byTable.get(name) ?? [0, 0]
  counts[slot]++
  byTable.set(name, counts)
}
for (const page of written) count(page, 0)
for (const page of pages) count(page, 1)
const perEvent = (count) => (count / measured).toFixed(2)
console.log(
  `${mode}: ${measured} events after ${warm}, ${frames} frames of ${pageSize} B (${perEvent(frames)} an event), ${pages.size} distinct pages (${perEvent(pages.size)} an event)`,
)
for (const [name, [framesOf, pagesOf]] of [...byTable].sort((a, b) => b[1][1] - a[1][1])) {
  console.log(`  ${name}: ${perEvent(framesOf)} frames, ${perEvent(pagesOf)} distinct pages an event`)
}
side.close()
await store.close()
process.exit(0)
