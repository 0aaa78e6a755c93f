/**
 * Would a SQLite layout of done records in generations keep the cost per event flat as a week of
 * records piles up (issue 48)? The prototype that decided it (2026-11-28), kept as the record of
 * that measurement: the store has since been built this way (schema version 3,
 * packages/core/src/store/sqlite/generations.ts, measured over HTTP by bench/src/retained.js). Here
 * the design and the one-table layout before it, with the same statements, without HTTP, on one thread:
 *
 *   ours  the store's layout before schema version 3: done records in one table
 *         `key → expires_at` (WITHOUT ROWID, 1 KiB pages), leases in another; a claim reads the done
 *         record and inserts the lease, a complete deletes the lease and writes the done record.
 *         With 10 million random keys every claim and complete lands on a B-tree page no other event
 *         touched lately (the growth bench/RESULTS.md measured: 0.78–0.80× over HTTP).
 *   gens  the same statements on a current table that holds at most GENERATION done records; when
 *         full it is sealed: renamed to a generation table of its own (`ALTER TABLE … RENAME`, no
 *         copy) and a new current table made, and a 32-bit hash of each of its keys goes into an
 *         in-memory open-addressing table (hash → generation), persisted per generation as a blob.
 *         A claim reads the current table (small: its pages stay in the page cache) and looks the
 *         key's hash up in memory; only a hash found (a duplicate, or one in about N / 2³² keys by
 *         chance) reads that generation's table. New records are written to the current table only.
 *
 * Per event: one claim and one complete, in group-commit transactions of BATCH claims and then
 * BATCH completes (as the store's event-loop batches with 10 in flight); WAL, `synchronous =
 * NORMAL` (no sync at commit, the same for both: the store's own syncs are not what grows), SQLite's
 * own checkpoints in the committing call, SQLite's default page cache (2,000 KiB, the store's) and,
 * as `ours-500`, the store's layout with a 500 KiB one. Each layout empty and filled with `retained`
 * done records (ours: bench/src/fill.js; gens: as many full generations). Every round of every
 * target runs in a process of its own (a first version kept the four connections in one process,
 * and the filled prototype ran at 0.61× its empty self at 200,000 records, against 0.89–0.92× with
 * two; not explained: this build's page caches are separate, no ENABLE_MEMORY_MANAGEMENT), which
 * opens the file (gens: loads the hashes from the blobs, as a store would at open), warms up with
 * 2,000 events and times `events`; rounds interleaved, medians: events/s and CPU µs per event
 * (process.cpuUsage), and read system calls per event (/proc/self/io: pages SQLite's cache missed,
 * a second method). Also the time to load the hashes and their memory.
 *
 *   taskset -c 0 node bench/profile/sqlite-generations.mjs [retained=10000000] [rounds=5] [events=20000]
 *
 * What the prototype leaves out (a store would need them; none is on the hot path of a new event):
 * several processes on one file (each would reload the generation list when the schema version
 * changes, read in the claim's transaction), the purge (a generation whose records have all expired
 * is dropped whole; its hashes removed), the console's reads across generations, the move of an
 * existing file's table into a first generation.
 */
import { execFileSync } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import Database from 'better-sqlite3'
import { fillSqliteTable } from '../src/fill.js'

const GENERATION = Number(process.env.GENERATION ?? 50_000)
const BATCH = 10
const WARM_UP = 2_000
const LEASE_MS = 30_000
const RETENTION_MS = 7 * 24 * 3600_000
const CACHE_KIB = { ours: 2_000, 'ours-500': 500, gens: 2_000 }

function open(path, layout) {
  const db = new Database(path)
  db.pragma('page_size = 1024')
  db.pragma('journal_mode = WAL')
  db.pragma('synchronous = NORMAL')
  db.pragma(`cache_size = -${CACHE_KIB[layout]}`)
  db.exec(`CREATE TABLE IF NOT EXISTS d (key TEXT PRIMARY KEY NOT NULL, expires_at INTEGER NOT NULL) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS l (key TEXT PRIMARY KEY NOT NULL, token TEXT, attempt INTEGER NOT NULL, expires_at INTEGER NOT NULL) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS g (id INTEGER PRIMARY KEY, hashes BLOB NOT NULL)`)
  return db
}

/** FNV-1a, 32 bits, of a key's UTF-16 units; never 0 (0 marks an empty slot). */
function hash(key) {
  let h = 0x811c9dc5
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193)
  return h >>> 0 || 1
}

/** Hash → generation, open addressing with linear probing; several keys may share a hash. */
class Hashes {
  constructor(capacity) {
    let size = 1024
    while (size < capacity * 1.4) size *= 2
    this.mask = size - 1
    this.hashes = new Uint32Array(size)
    this.gens = new Uint16Array(size)
    this.count = 0
  }
  add(h, gen) {
    let i = h & this.mask
    while (this.hashes[i] !== 0) i = (i + 1) & this.mask
    this.hashes[i] = h
    this.gens[i] = gen
    this.count++
  }
  /** The generations holding a key of hash `h` (usually none). */
  find(h) {
    let found
    for (let i = h & this.mask; this.hashes[i] !== 0; i = (i + 1) & this.mask) {
      if (this.hashes[i] !== h) continue
      found ??= []
      found.push(this.gens[i])
    }
    return found
  }
  get bytes() {
    return this.hashes.byteLength + this.gens.byteLength
  }
}

/** Seals the current table as generation `id`: renamed, a new one made, its keys' hashes kept as a blob. */
function sealer(db) {
  const addGen = db.prepare('INSERT INTO g (id, hashes) VALUES (?, ?)')
  return db.transaction((id) => {
    const keys = db.prepare('SELECT key FROM d').pluck().all()
    const blob = new Uint32Array(keys.length)
    for (let i = 0; i < keys.length; i++) blob[i] = hash(keys[i])
    db.exec(`ALTER TABLE d RENAME TO d_${id}; CREATE TABLE d (key TEXT PRIMARY KEY NOT NULL, expires_at INTEGER NOT NULL) WITHOUT ROWID`)
    addGen.run(id, Buffer.from(blob.buffer))
    return blob
  })
}

/** Makes the file of `layout` holding `size` done records. */
function fill(path, layout, size) {
  const db = open(path, layout)
  if (layout === 'gens') {
    const seal = sealer(db)
    for (let left = size, id = 1; left > 0; left -= GENERATION) {
      fillSqliteTable(db, { table: 'd', count: Math.min(GENERATION, left) })
      seal(id++)
    }
  } else if (size > 0) {
    fillSqliteTable(db, { table: 'd', count: size })
  }
  db.pragma('wal_checkpoint(TRUNCATE)')
  db.close()
}

/** Opens the file as a store would and returns what a round needs. */
function target(path, layout, expected) {
  const db = open(path, layout)
  const sql = {
    findDone: db.prepare('SELECT expires_at FROM d WHERE key = ?').pluck(),
    newLease: db.prepare('INSERT INTO l (key, token, attempt, expires_at) VALUES (?, ?, 1, ?) ON CONFLICT (key) DO NOTHING'),
    endLease: db.prepare('DELETE FROM l WHERE key = ? AND token = ?'),
    markDone: db.prepare('INSERT INTO d (key, expires_at) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET expires_at = excluded.expires_at'),
  }
  if (layout !== 'gens') return { db, sql, isDone: (key, now) => (sql.findDone.get(key) ?? 0) > now, written() {} }
  const started = performance.now()
  const hashes = new Hashes(expected)
  let nextGen = 1
  for (const { id, hashes: blob } of db.prepare('SELECT id, hashes FROM g').iterate()) {
    for (const h of new Uint32Array(blob.buffer, blob.byteOffset, blob.byteLength / 4)) hashes.add(h, id)
    nextGen = Math.max(nextGen, id + 1)
  }
  const loadMs = performance.now() - started
  const seal = sealer(db)
  const probes = new Map()
  let current = db.prepare('SELECT count(*) FROM d').pluck().get()
  const t = {
    db,
    sql,
    loadMs,
    hashes,
    probed: 0,
    isDone(key, now) {
      const here = sql.findDone.get(key)
      if (here !== undefined) return here > now
      const found = hashes.find(hash(key))
      if (!found) return false
      for (const gen of found) {
        t.probed++
        if (!probes.has(gen)) probes.set(gen, db.prepare(`SELECT expires_at FROM d_${gen} WHERE key = ?`).pluck())
        const at = probes.get(gen).get(key)
        if (at !== undefined) return at > now
      }
      return false
    },
    /** After a complete's transaction: seals the current table once it holds GENERATION records. */
    written(n) {
      current += n
      if (current < GENERATION) return
      const id = nextGen++
      for (const h of seal(id)) hashes.add(h, id)
      current = 0
    },
  }
  return t
}

function run(t, n) {
  for (let done = 0; done < n; done += BATCH) {
    const now = Date.now()
    const batch = Array.from({ length: BATCH }, () => ({ key: `default:${randomUUID()}`, token: randomUUID() }))
    t.db.transaction(() => {
      for (const { key, token } of batch) {
        if (t.isDone(key, now)) throw new Error('a fresh key was done')
        if (t.sql.newLease.run(key, token, now + LEASE_MS).changes !== 1) throw new Error('not acquired')
      }
    })()
    t.db.transaction(() => {
      for (const { key, token } of batch) {
        if (t.sql.endLease.run(key, token).changes !== 1) throw new Error('lease lost')
        t.sql.markDone.run(key, now + RETENTION_MS)
      }
    })()
    t.written(BATCH)
  }
}

/**
 * Read system calls of this process so far (`syscr` of /proc/self/io, Linux): a second method for
 * the growth, which is pages SQLite's cache missed and read from the OS (`pread64`).
 */
function readCalls() {
  return Number(/syscr: (\d+)/.exec(readFileSync('/proc/self/io', 'utf8'))?.[1] ?? Number.NaN)
}

/** One round in this process: warm-up, then `n` events timed. Prints a JSON line. */
function round(path, layout, size, n) {
  const t = target(path, layout, size + 200_000)
  if (layout === 'gens' && size > 0) {
    // A duplicate must be found through the hashes (the prototype's correctness).
    const key = t.db.prepare('SELECT key FROM d_1 LIMIT 1').pluck().get()
    if (!t.isDone(key, Date.now())) throw new Error('gens: a sealed key was not found')
  }
  run(t, WARM_UP)
  const probedBefore = t.probed ?? 0
  const reads = readCalls()
  const cpu = process.cpuUsage()
  const started = performance.now()
  run(t, n)
  const seconds = (performance.now() - started) / 1000
  const used = process.cpuUsage(cpu)
  const readsPerEvent = (readCalls() - reads) / n
  t.db.close()
  const extra = t.hashes ? { loadMs: t.loadMs, bytes: t.hashes.bytes, count: t.hashes.count, probed: (t.probed - probedBefore) / n } : {}
  console.log(JSON.stringify({ rate: n / seconds, cpu: (used.user + used.system) / n, reads: readsPerEvent, ...extra }))
}

if (process.argv[2] === '--round') {
  const [, , , path, layout, size, n] = process.argv
  round(path, layout, Number(size), Number(n))
  process.exit(0)
}

const retained = Number(process.argv[2] ?? 10_000_000)
const rounds = Number(process.argv[3] ?? 5)
const events = Number(process.argv[4] ?? 20_000)
const dir = mkdtempSync(join(tmpdir(), 'sqlite-generations-'))
const targets = []
for (const layout of (process.env.LAYOUTS ?? 'ours,ours-500,gens').split(',')) {
  for (const size of retained > 0 ? [0, retained] : [0]) {
    const path = join(dir, `${layout}-${size}.db`)
    const started = Date.now()
    fill(path, layout, size)
    console.error(`${layout} ${size}: filled in ${Math.round((Date.now() - started) / 1000)} s`)
    targets.push({ layout, size, path, rows: [] })
  }
}
const self = fileURLToPath(import.meta.url)
for (let r = 0; r < rounds; r++) {
  for (const t of targets) {
    const out = execFileSync(process.execPath, [self, '--round', t.path, t.layout, String(t.size), String(events)], { encoding: 'utf8' })
    const row = JSON.parse(out.trim().split('\n').at(-1))
    t.rows.push(row)
    console.error(`round ${r + 1} ${t.layout} ${t.size}: ${Math.round(row.rate)} events/s, ${row.cpu.toFixed(1)} µs CPU/event`)
  }
}
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]
console.log(
  `generation: ${GENERATION.toLocaleString('en')} records; batches of ${BATCH}; ${rounds} rounds of ${events.toLocaleString('en')} events, each in a process of its own`,
)
console.log(
  '| Layout | retained | events/s | ratio | CPU µs/event | read calls/event | file | hashes in memory | hashes loaded at open | generations read for a fresh key |',
)
console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |')
for (const t of targets) {
  const empty = targets.find((o) => o.layout === t.layout && o.size === 0)
  const m = (field) => median(t.rows.map((row) => row[field]))
  const ratio = t.size > 0 ? `${(m('rate') / median(empty.rows.map((row) => row.rate))).toFixed(2)}×` : ''
  const mib = (statSync(t.path).size / 2 ** 20).toFixed(0)
  const last = t.rows.at(-1)
  const memory = last.bytes === undefined ? '—' : `${(last.bytes / 2 ** 20).toFixed(0)} MiB (${last.count.toLocaleString('en')} keys)`
  const load = last.loadMs === undefined ? '—' : `${Math.round(m('loadMs'))} ms`
  const probed = last.probed === undefined ? '—' : m('probed').toFixed(4)
  console.log(
    `| ${t.layout} | ${t.size.toLocaleString('en')} | ${Math.round(m('rate')).toLocaleString('en')} | ${ratio} | ${m('cpu').toFixed(1)} | ${m('reads').toFixed(2)} | ${mib} MiB | ${memory} | ${load} | ${probed} |`,
  )
}
rmSync(dir, { recursive: true, force: true })
