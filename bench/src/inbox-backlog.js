/**
 * The inbox's ordered take under a backlog (issue 41): with a handler outage and `ordering: true`,
 * each email's first event fails and waits for its backoff while the email's later events wait
 * behind it. The inbox is filled through the store's own API with `n` such entries (n / 5 emails:
 * the head taken and failed, to be tried again in an hour, and four later events queued after),
 * then ordered takes are timed (each finds
 * nothing to take: the worst case, every entry blocked) while another client of the same server
 * measures its own latency: a PING on Redis (one thread: a script that runs long makes everyone
 * wait), `SELECT 1` on PostgreSQL, a claim and complete of a second store on the same SQLite file
 * (the take holds the file's write lock). n = 0, 10,000 and 100,000. Medians of `--takes` takes;
 * the other client's median and slowest answer during them. Not a test: the figures go to
 * bench/RESULTS.md ("Inbox backlog").
 *
 *   node bench/src/inbox-backlog.js                          SQLite, PostgreSQL, Redis; writes bench/RESULTS.md
 *   node bench/src/inbox-backlog.js --only redis --sizes 0,10000 --out /tmp/backlog.md
 *
 * Build first (`npx -y pnpm@12 build`): the bench imports the built packages.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { cpus, loadavg, tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import { PostgresDedupStore } from '@email-webhooks/core/postgres'
import { RedisDedupStore } from '@email-webhooks/core/redis'
import { SqliteDedupStore } from '@email-webhooks/core/sqlite'
import { Redis } from 'ioredis'
import pg from 'pg'
import { emitSection, parseArgs } from './section.js'
import { lazyServices } from './services.js'

const benchDir = join(dirname(fileURLToPath(import.meta.url)), '..')
const args = parseArgs(process.argv.slice(2))
const SIZES = (args.sizes ?? '0,10000,100000').split(',').map(Number)
const TAKES = Number(args.takes ?? 30)
const KINDS = (args.only ?? 'sqlite,postgres,redis').split(',')
const OUT = args.out ?? (args.only || args.sizes ? undefined : join(benchDir, 'RESULTS.md'))
const HEADING = '## Inbox backlog (issue 41)'
const PER_EMAIL = 5
const HOUR_MS = 3_600_000
const NAMES = { sqlite: 'SQLite', postgres: 'PostgreSQL', redis: 'Redis' }
const log = (line) => process.stderr.write(`${line}\n`)

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)] ?? 0
}
/** The largest value (a loop: a spread of many thousand values overflows the stack). */
const largest = (values) => values.reduce((a, b) => Math.max(a, b), 0)

/** Rows of the blocked backlog: for each of n / 5 emails a head due in an hour and four followers due now. */
function* backlog(n, now) {
  for (let e = 0; e < n / PER_EMAIL; e++) {
    const orderKey = `bench:email:${e}`
    for (let i = 0; i < PER_EMAIL; i++) {
      yield { key: `bench:${e}-${i}`, orderKey, createdAtMs: now - 60_000 + i, head: i === 0, nextAt: i === 0 ? now + HOUR_MS : now }
    }
  }
}

/**
 * Fills a store's inbox through its own API, as a handler outage leaves it: each email's first event
 * queued, taken and failed (to be tried again in an hour), then its four later events queued.
 */
async function fill(store, n) {
  const rows = [...backlog(n, Date.now())]
  const item = (r) => ({
    key: r.key,
    type: 'email.deferred',
    payload: '{}',
    timestamp: 1,
    orderKey: r.orderKey,
    createdAtMs: r.createdAtMs,
  })
  const inParallel = async (list, step) => {
    let next = 0
    await Promise.all(
      Array.from({ length: 32 }, async () => {
        while (next < list.length) await step(list[next++])
      }),
    )
  }
  const heads = rows.filter((r) => r.head)
  await inParallel(heads, (r) => store.inbox.enqueue(item(r), { retentionMs: HOUR_MS }))
  await inParallel(heads, async () => {
    const lease = await store.inbox.take({ leaseMs: 60_000, ordered: false })
    if (lease) await store.inbox.fail(lease, { error: 'down', retryInMs: HOUR_MS })
  })
  await inParallel(
    rows.filter((r) => !r.head),
    (r) => store.inbox.enqueue(item(r), { retentionMs: HOUR_MS }),
  )
}

/**
 * Times `TAKES` ordered takes one after another (each must find nothing), while `probe` (another
 * client's call) runs in a loop; the take's and the probe's times in ms.
 */
async function measure(store, probe) {
  const takes = []
  const probes = []
  let running = true
  const prober = (async () => {
    while (running) {
      const started = performance.now()
      await probe()
      probes.push(performance.now() - started)
      await new Promise((resolve) => setImmediate(resolve))
    }
  })()
  for (let i = 0; i < TAKES; i++) {
    const started = performance.now()
    const lease = await store.inbox.take({ leaseMs: 30_000, ordered: true })
    takes.push(performance.now() - started)
    if (lease) throw new Error(`a take found ${lease.key}: the backlog is not blocked`)
  }
  running = false
  await prober
  return { take: median(takes), takeMax: largest(takes), probe: median(probes), probeMax: largest(probes) }
}

async function oneRun(kind, n, dir, services) {
  if (kind === 'sqlite') {
    const path = join(dir, `backlog-${n}.db`)
    const store = new SqliteDedupStore({ path })
    await fill(store, n)
    const other = new SqliteDedupStore({ path })
    try {
      return await measure(store, async () => {
        const claimed = await other.claim(`probe:${crypto.randomUUID()}`, { leaseMs: 30_000, retentionMs: HOUR_MS })
        if (claimed.status === 'acquired') await other.complete(claimed.claim, { retentionMs: HOUR_MS })
      })
    } finally {
      await Promise.all([store.close(), other.close()])
    }
  }
  const server = await services.get(kind)
  if (kind === 'postgres') {
    const store = new PostgresDedupStore({ connectionString: server.url, table: `backlog_${n}` })
    await fill(store, n)
    const other = new pg.Client({ connectionString: server.url })
    await other.connect()
    try {
      return await measure(store, () => other.query('SELECT 1'))
    } finally {
      await other.end()
      await store.close()
    }
  }
  const store = new RedisDedupStore({ url: server.url, prefix: `backlog-${n}:` })
  await fill(store, n)
  const other = new Redis(server.url)
  try {
    return await measure(store, () => other.ping())
  } finally {
    other.disconnect()
    await store.close()
  }
}

const services = lazyServices()
const dir = mkdtempSync(join(tmpdir(), 'email-webhooks-backlog-'))
const started = new Date()
const results = []
try {
  for (const kind of KINDS) {
    for (const n of SIZES) {
      log(`${NAMES[kind]}: ${n} blocked entries …`)
      const figures = await oneRun(kind, n, dir, services)
      log(
        `  take ${figures.take.toFixed(2)} ms (slowest ${figures.takeMax.toFixed(1)}), other client ${figures.probe.toFixed(2)} ms (slowest ${figures.probeMax.toFixed(1)})`,
      )
      results.push({ kind, n, ...figures })
    }
  }
} finally {
  await services.stopAll()
  rmSync(dir, { recursive: true, force: true })
}

const coreVersion = JSON.parse(readFileSync(join(benchDir, 'node_modules/@email-webhooks/core/package.json'), 'utf8')).version
const probeName = {
  sqlite: 'a second store’s claim + complete on the file',
  postgres: '`SELECT 1` on another connection',
  redis: 'another client’s `PING`',
}
const lines = [
  HEADING,
  '',
  `Run of ${started.toISOString().slice(0, 16).replace('T', ' ')} UTC by \`node bench/src/inbox-backlog.js\` (written into this file by that script; a full \`npx -y pnpm@12 bench\` run rewrites the file without it). @email-webhooks/core ${coreVersion}, Node ${process.version}; ${cpus().length} × ${cpus()[0]?.model ?? 'CPU'}, load average ${loadavg()[0].toFixed(1)} at the end.`,
  '',
  `Each inbox holds n blocked entries, filled through the store's own API as a handler outage leaves them with \`ordering: true\` (n / ${PER_EMAIL} emails: the first event taken and failed, to be tried again in an hour, the four later ones queued behind it). ${TAKES} ordered takes one after another, each finding nothing (the worst case), while another client of the same server answers in a loop. Medians, and the slowest.`,
  '',
  '| Store | blocked entries | ordered take | slowest take | other client (what) | other client, slowest |',
  '| --- | ---: | ---: | ---: | --- | ---: |',
  ...results.map(
    (r) =>
      `| ${NAMES[r.kind]} | ${r.n.toLocaleString('en-US')} | ${r.take.toFixed(2)} ms | ${r.takeMax.toFixed(1)} ms | ${r.probe.toFixed(2)} ms (${probeName[r.kind]}) | ${r.probeMax.toFixed(1)} ms |`,
  ),
  '',
]
emitSection(lines, OUT, HEADING)
