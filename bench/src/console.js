/**
 * Page times of the operator's console (issue 45): each store seeded through its own API with
 * 100,000 events recorded as done (20,000 emails of 5 events, with ordering: marks and facts) and
 * 10,000 inbox entries (7,000 handled, 2,000 waiting, 1,000 dead, of 2,000 emails), then every page
 * asked for through the console's fetch handler in this process (store reads included, no HTTP),
 * a few times to warm up and then `--runs` times; median, p95 and the slowest, and each page's
 * weight. Not a test: the figures go to bench/RESULTS.md ("Console pages").
 *
 *   node bench/src/console.js                      SQLite, PostgreSQL and Redis; writes bench/RESULTS.md
 *   node bench/src/console.js --only sqlite --events 20000 --inbox 2000 --runs 10 --out /tmp/console.md
 *
 * Build first (`npx -y pnpm@12 build`): the bench imports the built packages.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { cpus, loadavg, tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { gzipSync } from 'node:zlib'
import { emailWebhookConsole } from '@email-webhooks/core/console'
import { PostgresDedupStore } from '@email-webhooks/core/postgres'
import { RedisDedupStore } from '@email-webhooks/core/redis'
import { SqliteDedupStore } from '@email-webhooks/core/sqlite'
import { lazyServices } from './services.js'

const benchDir = join(dirname(fileURLToPath(import.meta.url)), '..')
const args = Object.fromEntries(
  process.argv
    .slice(2)
    .flatMap((arg, i, all) =>
      arg.startsWith('--') ? [[arg.slice(2), all[i + 1]?.startsWith('--') ? 'true' : (all[i + 1] ?? 'true')]] : [],
    ),
)
const EVENTS = Number(args.events ?? 100_000)
const INBOX = Number(args.inbox ?? 10_000)
const RUNS = Number(args.runs ?? 30)
const KINDS = (args.only ?? 'sqlite,postgres,redis').split(',')
const OUT = args.out ?? (args.only || args.events || args.inbox ? undefined : join(benchDir, 'RESULTS.md'))
const PER_EMAIL = 5
const TYPES = ['email.queued', 'email.submitted', 'email.recipient_accepted', 'email.bounced', 'email.complained']
const RETENTION_MS = 7 * 24 * 3_600_000
const PASSWORD = 'bench-console-password'
const AUTH = `Basic ${btoa(`ops:${PASSWORD}`)}`
const log = (line) => process.stderr.write(`${line}\n`)

/** Runs `work(i)` for i < n, `concurrency` at a time. */
async function pool(n, concurrency, work) {
  let next = 0
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) await work(next++)
    }),
  )
}

const uuid = (group, i) => `0195f3c2-${String(group).padStart(4, '0')}-7000-8000-${String(i).padStart(12, '0')}`

/** 100,000 events as the receiver records them with ordering: claim (mark and fact read) and complete (mark advanced, fact counted). */
async function seedEvents(store) {
  const emails = EVENTS / PER_EMAIL
  const base = Date.now() - 24 * 3_600_000
  await pool(emails, 100, async (e) => {
    const email = uuid(1, e)
    for (let j = 0; j < PER_EMAIL; j++) {
      const id = uuid(2, e * PER_EMAIL + j)
      const createdAtMs = base + e * 1_000 + j
      const type = TYPES[j]
      const order = { key: `default:email:${email}`, mark: { createdAtMs, eventId: id, type }, fact: `${type}|${createdAtMs}` }
      const claimed = await store.claim(`default:${id}`, { leaseMs: 30_000, retentionMs: RETENTION_MS, order })
      if (claimed.status !== 'acquired') throw new Error(`seed claim ${id}: ${claimed.status}`)
      await store.complete(claimed.claim, { retentionMs: RETENTION_MS, order, factChange: { handled: 1, reconciled: 0 } })
    }
  })
}

/** 10,000 inbox entries: 7,000 handled, 1,000 dead (through take and fail), then 2,000 waiting. */
async function seedInbox(store) {
  const inbox = store.inbox
  const finished = Math.round(INBOX * 0.8)
  const item = (i) => {
    const email = uuid(3, Math.floor(i / PER_EMAIL))
    const id = uuid(4, i)
    const type = TYPES[i % PER_EMAIL]
    const createdAtMs = Date.now() - 3_600_000 + i
    const payload = JSON.stringify({
      id,
      type,
      created_at: new Date(createdAtMs).toISOString(),
      data: { id: email, recipient: `r${i}@example.com` },
    })
    return {
      key: `default:${id}`,
      type,
      payload,
      timestamp: Math.floor(createdAtMs / 1000),
      orderKey: `default:email:${email}`,
      createdAtMs,
    }
  }
  await pool(finished, 50, (i) => inbox.enqueue(item(i), { retentionMs: RETENTION_MS }))
  let taken = 0
  await pool(finished, 20, async () => {
    const lease = await inbox.take({ leaseMs: 60_000, ordered: false })
    if (!lease) return
    const dead = Number(lease.key.slice(-12)) % 8 === 7
    if (dead) await inbox.fail(lease, { error: `Error: the mailbox service answered 503 (attempt ${lease.attempt})`, retryInMs: null })
    else await inbox.finish(lease, { retentionMs: RETENTION_MS })
    taken++
  })
  if (taken !== finished) throw new Error(`took ${taken} of ${finished}`)
  await pool(INBOX - finished, 50, (i) => inbox.enqueue(item(finished + i), { retentionMs: RETENTION_MS }))
}

/** The pages asked for, with ids from the seeded data (the cursors from a first page). */
async function pages(handler) {
  const text = async (path) => (await handler(new Request(`http://bench${path}`, { headers: { authorization: AUTH } }))).text()
  const next = async (path) => /href="([^"]+)" rel="next"/.exec(await text(path))?.[1]?.replace(/&amp;/g, '&')
  return [
    ['Overview', '/'],
    ['Find an event by id', `/find?q=${uuid(2, 12_345 % EVENTS)}`],
    ['An event (with its inbox entry)', `/events/${uuid(4, 42)}`],
    ["An email's story (inbox mode: 5 entries)", `/emails/${uuid(3, 8)}`],
    ["An email's story (request mode: facts and mark)", `/emails/${uuid(1, 777)}`],
    ['Inbox entries, waiting, page 1', '/find?state=pending'],
    ['Inbox entries, handled, page 2', (await next('/find?state=done')) ?? '/find?state=done'],
    ['Dead letters, page 1', '/dead'],
    ['Dead letters of a type, page 2', (await next('/dead?type=email.bounced')) ?? '/dead?type=email.bounced'],
    ['Plan: retry dead letters of a type', '/dead/plan?do=retry&type=email.bounced'],
  ]
}

async function measure(kind, store) {
  const handler = emailWebhookConsole({ store, auth: { username: 'ops', password: PASSWORD } })
  const rows = []
  for (const [label, path] of await pages(handler)) {
    const times = []
    let bytes = 0
    let gzip = 0
    // How long the page kept this process's event loop (a receiver's, when the console is mounted in
    // its app) from turning: the longest gap between ticks of a 1 ms timer, the last counted up to
    // the page's end (a read on the loop is over before any timer can fire).
    let blocked = 0
    for (let run = -3; run < RUNS; run++) {
      let last = performance.now()
      let gap = 0
      const tick = setInterval(() => {
        const now = performance.now()
        gap = Math.max(gap, now - last)
        last = now
      }, 1)
      const started = performance.now()
      const response = await handler(new Request(`http://bench${path}`, { headers: { authorization: AUTH } }))
      const body = await response.text()
      const ended = performance.now()
      clearInterval(tick)
      const ms = ended - started
      if (run >= 0) blocked = Math.max(blocked, gap, ended - last)
      if (response.status !== 200 || body.includes('did not answer'))
        throw new Error(`${kind} ${path}: ${response.status} ${body.slice(0, 300)}`)
      if (run >= 0) times.push(ms)
      bytes = Buffer.byteLength(body)
      gzip = gzipSync(body).byteLength
    }
    times.sort((a, b) => a - b)
    const at = (q) => times[Math.min(times.length - 1, Math.floor(q * times.length))]
    rows.push({ label, median: at(0.5), p95: at(0.95), max: times[times.length - 1], blocked, bytes, gzip })
    log(
      `  ${kind} ${label}: median ${at(0.5).toFixed(1)} ms, p95 ${at(0.95).toFixed(1)} ms, event loop held up to ${blocked.toFixed(1)} ms`,
    )
  }
  return rows
}

async function versionOf(kind, services) {
  if (kind === 'sqlite')
    return `SQLite ${JSON.parse(readFileSync(join(benchDir, 'node_modules/better-sqlite3/package.json'), 'utf8')).version} (better-sqlite3)`
  const server = await services.get(kind)
  if (kind === 'postgres') {
    const { default: pg } = await import('pg')
    const client = new pg.Client({ connectionString: server.url })
    await client.connect()
    const version = (await client.query('SHOW server_version')).rows[0].server_version
    await client.end()
    return `PostgreSQL ${version}`
  }
  const { Redis } = await import('ioredis')
  const client = new Redis(server.url)
  const version = /redis_version:(\S+)/.exec(await client.info('server'))?.[1]
  client.disconnect()
  return `Redis ${version}`
}

const services = lazyServices()
const dir = mkdtempSync(join(tmpdir(), 'bench-console-'))
const started = new Date()
const results = []
try {
  for (const kind of KINDS) {
    const store =
      kind === 'sqlite'
        ? new SqliteDedupStore({ path: join(dir, 'console.db') })
        : kind === 'postgres'
          ? new PostgresDedupStore({ connectionString: (await services.get('postgres')).url })
          : new RedisDedupStore({ url: (await services.get('redis')).url })
    const seeding = performance.now()
    await seedEvents(store)
    await seedInbox(store)
    log(`${kind}: seeded ${EVENTS} events and ${INBOX} inbox entries in ${((performance.now() - seeding) / 1000).toFixed(0)} s`)
    results.push({ kind, version: await versionOf(kind, services), rows: await measure(kind, store) })
    await store.close()
  }
} finally {
  await services.stopAll()
  rmSync(dir, { recursive: true, force: true })
}

const NAMES = { sqlite: 'SQLite', postgres: 'PostgreSQL', redis: 'Redis' }
const cssBytes = (
  await (
    await emailWebhookConsole({ store: { claim() {}, complete() {}, release() {} }, auth: { username: 'ops', password: PASSWORD } })(
      new Request('http://bench/assets/console.css', { headers: { authorization: AUTH } }),
    )
  ).text()
).length
const slowest = Math.max(...results.flatMap((r) => r.rows.map((row) => row.max)))
const coreVersion = JSON.parse(readFileSync(join(benchDir, 'node_modules/@email-webhooks/core/package.json'), 'utf8')).version
const lines = [
  '## Console pages (issue 45)',
  '',
  `Run of ${started.toISOString().slice(0, 16).replace('T', ' ')} UTC by \`node bench/src/console.js\` (written into this file by that script; a full \`npx -y pnpm@12 bench\` run rewrites the file without it: run the script again). @email-webhooks/core ${coreVersion}, Node ${process.version}, ${results.map((r) => r.version).join(', ')}; ${cpus().length} × ${cpus()[0]?.model ?? 'CPU'}, load average ${loadavg()[0].toFixed(1)} at the end.`,
  '',
  `Each store seeded through its own API with ${EVENTS.toLocaleString('en-US')} events recorded as done (${(EVENTS / PER_EMAIL).toLocaleString('en-US')} emails of ${PER_EMAIL} events, with ordering: marks and facts) and ${INBOX.toLocaleString('en-US')} inbox entries (80 % taken: 7 in 8 of those handled, 1 in 8 dead; 20 % waiting). Each page asked for through the console's fetch handler in the bench's process (its store reads included, HTTP not), 3 times to warm up, then ${RUNS} times; the servers on this machine (127.0.0.1). Target: every page under 200 ms. Slowest single answer of the run: ${slowest.toFixed(1)} ms. Where the time goes: the overview on SQLite and PostgreSQL scans the done records (their count and the hourly chart, so it grows with them); an email's story on Redis walks the handled and dead inbox entries (the inbox indexes those by time only; at most 20,000 a page); the inbox lists sort the entries of one state in the database (there is no index on their time) and return one page; every other read is by key or an index range.`,
  '',
]
for (const { kind, rows } of results) {
  lines.push(
    `### ${NAMES[kind]}`,
    '',
    '| Page | median | p95 | slowest | event loop held (longest) | HTML (gzip) |',
    '| --- | ---: | ---: | ---: | ---: | ---: |',
  )
  for (const row of rows) {
    lines.push(
      `| ${row.label} | ${row.median.toFixed(1)} ms | ${row.p95.toFixed(1)} ms | ${row.max.toFixed(1)} ms | ${row.blocked.toFixed(1)} ms | ${(row.bytes / 1024).toFixed(1)} KiB (${(row.gzip / 1024).toFixed(1)} KiB) |`,
    )
  }
  lines.push('')
}
lines.push(
  `Page weight: each page is one HTML document and one stylesheet (${(cssBytes / 1024).toFixed(1)} KiB, the only other request); no script, no font, no image.`,
  '',
)
const section = lines.join('\n')
process.stdout.write(`${section}\n`)
if (OUT) {
  let text = ''
  try {
    text = readFileSync(OUT, 'utf8')
  } catch {}
  const start = text.indexOf('## Console pages (issue 45)')
  if (start >= 0) {
    const end = text.indexOf('\n## ', start + 1)
    text = `${text.slice(0, start)}${section}${end >= 0 ? text.slice(end + 1) : ''}`
  } else text = `${text.trimEnd()}\n\n${section}`
  writeFileSync(OUT, text.endsWith('\n') ? text : `${text}\n`)
  log(`wrote ${OUT}`)
}
