/**
 * CPU per event of the SQLite inbox (issue 48), without HTTP: `count` signed events recorded by an
 * inbox-mode receiver (`receive`, 10 in flight, its worker off), then drained by
 * `createInboxWorker` at its defaults; first, with `retained`, as many events are recorded and
 * drained, so that the inbox holds that many done entries (a store some days into its retention).
 *
 *   node bench/profile/inbox-drain.mjs [count=20000] [retained=0]
 *
 * Build first (`npx -y pnpm@12 build`).
 */
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInboxWorker, createReceiver } from '@email-webhooks/core'
import { SqliteDedupStore } from '@email-webhooks/core/sqlite'
import { createSignedDelivery, TEST_SECRET } from '@email-webhooks/core/testing'

const N = Number(process.argv[2] ?? 20000)
const DONE = Number(process.argv[3] ?? 0)
const store = new SqliteDedupStore({ path: join(mkdtempSync(join(tmpdir(), 'drain-')), 'db.sqlite') })
const receiver = createReceiver({
  secret: TEST_SECRET,
  store,
  logger: false,
  mode: 'inbox',
  inbox: { worker: false },
  handlers: { 'email.bounced': () => {} },
})
const cpu0 = () => {
  const u = process.cpuUsage()
  return u.user + u.system
}
if (DONE > 0) {
  const pre = []
  for (let i = 0; i < DONE; i++) pre.push(await createSignedDelivery({ type: 'email.bounced' }))
  for (let i = 0; i < DONE; i += 50)
    await Promise.all(pre.slice(i, i + 50).map((d) => receiver.receive({ headers: d.headers, body: d.body })))
  const w0 = createInboxWorker({ store, handlers: { 'email.bounced': () => {} } })
  const c = cpu0()
  await w0.drain()
  console.log('preload', DONE, 'done entries; drain µs CPU/event', ((cpu0() - c) / DONE).toFixed(1))
}
const ds = []
for (let i = 0; i < N; i++) ds.push(await createSignedDelivery({ type: 'email.bounced' }))
const cpu = () => {
  const u = process.cpuUsage()
  return u.user + u.system
}
let c0 = cpu(),
  t0 = performance.now()
for (let i = 0; i < N; i += 10) await Promise.all(ds.slice(i, i + 10).map((d) => receiver.receive({ headers: d.headers, body: d.body })))
console.log('enqueue µs CPU/event', ((cpu() - c0) / N).toFixed(1), 'events/s', Math.round(N / ((performance.now() - t0) / 1000)))
const w = createInboxWorker({ store, handlers: { 'email.bounced': () => {} } })
c0 = cpu()
t0 = performance.now()
await w.drain()
console.log(
  'drain µs CPU/event',
  ((cpu() - c0) / N).toFixed(1),
  'events/s',
  Math.round(N / ((performance.now() - t0) / 1000)),
  JSON.stringify(w.counts()),
)
await store.close()
