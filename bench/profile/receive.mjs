/**
 * The receiving path without HTTP: `count` distinct pre-signed ~1 KB deliveries, 10 in flight,
 * straight into a receiver, to count what core itself costs per event (no framework, no sockets).
 *
 *   node bench/profile/receive.mjs <variant> [count] [warmup] [pool]
 *
 *   hand          the bench's hand-written receiver with a Map (../src/hand/receiver.js)
 *   core          createReceiver with a MemoryDedupStore (what the Hono adapter calls)
 *   hand-sqlite   the hand-written receiver with SQLite group commit
 *   core-sqlite   createReceiver with a durable SqliteDedupStore (durability 'full')
 *
 * DB=<file> runs the SQLite variants on that file (e.g. filled by fill-sqlite.mjs) instead of a new one.
 * Prints CPU µs per event (user and kernel) of the `count` events after `warmup` (default 20,000).
 * `pool` (default warmup + count) deliveries are signed first: under callgrind, run it twice with
 * different counts and the same pool, and take the difference (receive-cg.sh).
 */
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { memoryDedup, sqliteDedup } from '../src/hand/dedup.js'
import { createHandReceiver } from '../src/hand/receiver.js'
import { BENCH_SECRET, signedDelivery } from '../src/payloads.js'

// CORE_DIST=<folder with index.js and sqlite.js>: another build of core, to compare two builds (receive-cg.sh).
const from = (name) =>
  process.env.CORE_DIST
    ? pathToFileURL(join(process.env.CORE_DIST, `${name}.js`)).href
    : `@email-webhooks/${name === 'index' ? 'core' : `core/${name}`}`
const { createReceiver, MemoryDedupStore } = await import(from('index'))
const { SqliteDedupStore } = await import(from('sqlite'))
const handlers = { 'email.queued': async () => {} }
// Both receivers read this clock, set once the pool is signed: under valgrind on a busy machine a
// run can outlast the 300 s window, and a stale delivery would be refused.
let clock = Date.now()
const now = () => clock
// DB=<file>: the SQLite variants start on that file (e.g. one filled by fill-sqlite.mjs) instead of a new one.
const file = (name) => process.env.DB || join(mkdtempSync(join(tmpdir(), 'email-webhooks-receive-')), name)

/** Each variant: a function from a delivery to its answer's status, shaped as its adapter would call it. */
const variants = {
  hand: async () => {
    const receive = createHandReceiver({ secret: BENCH_SECRET, handlers, dedup: memoryDedup(), now })
    return handCall(receive)
  },
  core: async () => coreCall(new MemoryDedupStore()),
  'hand-sqlite': async () => {
    const receive = createHandReceiver({ secret: BENCH_SECRET, handlers, dedup: await sqliteDedup({ path: file('hand.db') }), now })
    return handCall(receive)
  },
  'core-sqlite': async () => coreCall(new SqliteDedupStore({ path: file('dedup.db') })),
}

function handCall(receive) {
  return async ({ headers, body }) => {
    const bytes = Buffer.from(body.buffer, body.byteOffset, body.byteLength)
    const answer = await receive(headers['webhook-id'], headers['webhook-timestamp'], headers['webhook-signature'], bytes)
    return answer.status
  }
}

function coreCall(store) {
  const receiver = createReceiver({
    secret: BENCH_SECRET,
    handlers,
    store,
    now,
    ...(process.env.TELEMETRY === '0' ? { telemetry: false } : {}),
  })
  return async ({ headers, body }) => {
    // As the Hono adapter: a `get` over the framework's header lookup, the body as an ArrayBuffer.
    const answer = await receiver.receive({ headers: { get: (name) => headers[name] ?? null }, body, context: { c: undefined } })
    return answer.status
  }
}

const variant = process.argv[2]
const count = Number(process.argv[3] ?? 100_000)
const warmup = Number(process.argv[4] ?? 20_000)
const poolSize = Number(process.argv[5] ?? warmup + count)
if (!(variant in variants) || !Number.isInteger(count) || !Number.isInteger(warmup) || !(poolSize >= warmup + count)) {
  console.error(`usage: node receive.mjs <${Object.keys(variants).join('|')}> [count] [warmup]`)
  process.exit(2)
}
const call = await variants[variant]()
const pool = Array.from({ length: poolSize }, () => {
  const { headers, body } = signedDelivery(1024)
  const buffer = body.buffer.slice(body.byteOffset, body.byteOffset + body.byteLength)
  // Header strings as a server gets them off the socket: flat (the signer's are cons strings).
  return { headers: JSON.parse(JSON.stringify(headers)), body: variant.startsWith('hand') ? body : buffer }
})

async function startProfile() {
  const { Session } = await import('node:inspector/promises')
  const session = new Session()
  session.connect()
  await session.post('Profiler.enable')
  await session.post('Profiler.setSamplingInterval', { interval: 50 })
  await session.post('Profiler.start')
  return session
}

async function stopProfile(session, path) {
  const { profile } = await session.post('Profiler.stop')
  const { writeFileSync } = await import('node:fs')
  writeFileSync(path, JSON.stringify(profile))
}

async function startSampling() {
  const { Session } = await import('node:inspector/promises')
  const session = new Session()
  session.connect()
  await session.post('HeapProfiler.startSampling', {
    samplingInterval: 1024,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: process.env.ALLOCATIONS_MINOR !== '0',
  })
  return session
}

async function stopSampling(session, path) {
  const { profile } = await session.post('HeapProfiler.stopSampling')
  const { writeFileSync } = await import('node:fs')
  writeFileSync(path, JSON.stringify(profile))
}

async function run(from, to) {
  let next = from
  let failed = 0
  const lane = async () => {
    while (next < to) {
      const status = await call(pool[next++])
      if (status !== 200) failed++
    }
  }
  await Promise.all(Array.from({ length: 10 }, lane))
  if (failed > 0) throw new Error(`${failed} deliveries were not answered 200`)
}

clock = Date.now()
await run(0, warmup)
// RETAINED=1 (with --expose-gc): heap bytes kept per measured event, after full collections.
function heapAfterGc() {
  globalThis.gc()
  return process.memoryUsage().heapUsed
}
const heapBefore = process.env.RETAINED ? heapAfterGc() : 0
// PROFILE=file.cpuprofile: a V8 CPU profile of the measured events only (not the pool's signing);
// ALLOCATIONS=file.heapprofile: where they allocate (sampled, collected objects included).
const session = process.env.PROFILE ? await startProfile() : undefined
const sampling = process.env.ALLOCATIONS ? await startSampling() : undefined
const before = process.cpuUsage()
await run(warmup, warmup + count)
const { user, system } = process.cpuUsage(before)
if (session) await stopProfile(session, process.env.PROFILE)
if (sampling) await stopSampling(sampling, process.env.ALLOCATIONS)
if (process.env.RETAINED) {
  console.log(`retained: ${((heapAfterGc() - heapBefore) / count).toFixed(0)} bytes per event`)
}
const per = (us) => (us / count).toFixed(2)
console.log(`${variant.padEnd(11)} ${count} events, CPU µs/event ${per(user + system)} (user ${per(user)}, kernel ${per(system)})`)
process.exit(0)
