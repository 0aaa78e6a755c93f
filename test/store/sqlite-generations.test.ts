/**
 * The SQLite store's done records in generations (packages/core/src/store/sqlite/generations.ts):
 * sealed generations are found again by the store, by another connection and by another process
 * (a duplicate is never answered as new, however the seals interleave); expired generations are
 * dropped whole, by any connection, without the others failing on the table that went; a file of
 * the one-table layout moves into generation 1 (hashed when small, read by SQL and purged row by
 * row when large), and a process of the older release fails its claims rather than miss a record.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DedupStoreError } from '@email-webhooks/core'
import { SqliteDedupStore } from '@email-webhooks/core/sqlite'
import Database from 'better-sqlite3'
import { afterAll, describe, expect, it } from 'vitest'
import { sqliteConsoleSource } from '../../packages/core/src/store/sqlite/console.js'
import { Generations, HASH_CHUNK } from '../../packages/core/src/store/sqlite/generations.js'
import { type ReadStep, readerHere } from '../../packages/core/src/store/sqlite/reader.js'
import { scaled } from '../support/time.js'
import { expectOneWinnerPerKey, race } from './process-cases.js'
import { storeChildren, withStore } from './process-harness.js'

const dir = mkdtempSync(join(tmpdir(), 'email-webhooks-generations-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
let files = 0
const newFile = () => join(dir, `gens-${files++}.db`)
const TABLE = 'email_webhook_dedup'
const HOUR = 3_600_000
const LONG = { leaseMs: 60_000, retentionMs: HOUR }

/** Claims and completes `keys` one batch of `batch` at a time. */
async function completeAll(store: SqliteDedupStore, keys: string[], retentionMs = HOUR, batch = 50): Promise<void> {
  for (let i = 0; i < keys.length; i += batch) {
    await Promise.all(
      keys.slice(i, i + batch).map(async (key) => {
        const result = await store.claim(key, { leaseMs: 60_000, retentionMs })
        if (result.status !== 'acquired') throw new Error(`${key}: ${result.status}`)
        expect(await store.complete(result.claim, { retentionMs })).toBe(true)
      }),
    )
  }
}

/** The sealed generations' tables of the file, by id. */
function generationTables(path: string): string[] {
  const db = new Database(path, { readonly: true })
  try {
    return db
      .prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name GLOB '${TABLE}_g[0-9]*' ORDER BY name`)
      .pluck()
      .all() as string[]
  } finally {
    db.close()
  }
}

function count(path: string, sql: string, ...args: unknown[]): number {
  const db = new Database(path, { readonly: true })
  try {
    return db
      .prepare(sql)
      .pluck()
      .get(...args) as number
  } finally {
    db.close()
  }
}

const keys = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `default:${prefix}-${i}`)

/** Completes keys `prefix`-0, -1, … 50 a batch until the store sealed its first generation (bounded); returns them. */
async function completeUntilSealed(store: SqliteDedupStore, path: string, prefix: string, retentionMs = HOUR): Promise<string[]> {
  const done: string[] = []
  for (let round = 0; generationTables(path).length === 0; round++) {
    if (round === 200) throw new Error('no seal after 10,000 records')
    const batch = keys(`${prefix}-${round}`, 50)
    await completeAll(store, batch, retentionMs)
    done.push(...batch)
  }
  return done
}

/** Two stores on `path` sealing every 100 records, on one clock the test moves (`clock.now`). */
function twoStores(path: string) {
  const clock = { now: Date.now() }
  const open = () => new SqliteDedupStore({ path, generationRecords: 100, now: () => clock.now })
  return { a: open(), b: open(), clock }
}

describe('SqliteDedupStore: done records in generations', () => {
  it('seals the current table every generationRecords records and finds every sealed key again, through the store and a fresh one', async () => {
    const path = newFile()
    const done = keys('sealed', 1_000)
    await withStore(new SqliteDedupStore({ path, generationRecords: 100 }), async (store) => {
      await completeAll(store, done)
      for (const key of done) expect(await store.claim(key, LONG)).toEqual({ status: 'duplicate' })
      for (const key of done.slice(0, 50)) expect(await store.lookup(key)).toBe('done')
      // Fresh keys are new: a hash found by chance reads its generation and finds nothing.
      for (const key of keys('fresh', 200)) expect((await store.claim(key, LONG)).status).toBe('acquired')
    })
    const sealed = generationTables(path)
    expect(sealed.length).toBeGreaterThanOrEqual(8)
    expect(count(path, `SELECT count(*) FROM ${TABLE}_now`)).toBeLessThan(200)
    // The view reads every generation: each done record once.
    expect(count(path, `SELECT count(*) FROM ${TABLE}_done`)).toBe(1_000)
    // `<table>` is a note no older release can use (its statements on expires_at fail to prepare).
    expect(count(path, `SELECT count(*) FROM pragma_table_info('${TABLE}') WHERE name = 'expires_at'`)).toBe(0)
    // A new process's store loads the generations' hashes at its first read.
    await withStore(new SqliteDedupStore({ path }), async (store) => {
      expect(await store.lookup(done[0] as string)).toBe('done')
      for (const key of done) expect(await store.claim(key, LONG)).toEqual({ status: 'duplicate' })
    })
    await withStore(new SqliteDedupStore({ path, readOnly: true }), async (store) => {
      expect(await store.lookup(done[999] as string)).toBe('done')
      expect(await store.lookup('default:never')).toBe('absent')
    })
  })

  it('two connections, each sealing: every key one completed is a duplicate for the other right after, whichever sealed last', async () => {
    const path = newFile()
    const a = new SqliteDedupStore({ path, generationRecords: 100 })
    const b = new SqliteDedupStore({ path, generationRecords: 100 })
    try {
      for (let round = 0; round < 30; round++) {
        const [writer, reader] = round % 2 === 0 ? [a, b] : [b, a]
        const batch = keys(`round-${round}`, 37)
        await completeAll(writer, batch, HOUR, 37)
        for (const key of batch) expect(await reader.claim(key, LONG)).toEqual({ status: 'duplicate' })
      }
    } finally {
      await a.close()
      await b.close()
    }
    expect(generationTables(path).length).toBeGreaterThanOrEqual(8)
  })

  it('4 processes race on 2,000 ids while sealing every 100 records: one winner per id, all duplicates for a fifth', async () => {
    const path = newFile()
    const count = 2_000
    const fork = storeChildren()
    process.env.GENERATION_RECORDS = '100'
    let racers: ReturnType<typeof fork>[]
    try {
      racers = Array.from({ length: 4 }, (_, index) => fork('sqlite', path, '', 'race', String(count), String(index % 2)))
    } finally {
      delete process.env.GENERATION_RECORDS
    }
    const reports = await race(racers)
    expectOneWinnerPerKey(reports, count)
    expect(generationTables(path).length).toBeGreaterThanOrEqual(10)
    await withStore(new SqliteDedupStore({ path }), async (store) => {
      for (let i = 0; i < count; i++) expect((await store.claim(`race-${i}`, LONG)).status).toBe('duplicate')
    })
  })

  it('drops a generation whose records all expired, and another connection that knew it goes on without error', async () => {
    const path = newFile()
    const { a, b, clock } = twoStores(path)
    try {
      const old = keys('old', 300)
      await completeAll(a, old, 60_000)
      const kept = keys('kept', 300)
      await completeAll(a, kept, 10 * HOUR)
      // b loads every generation's hashes.
      for (const key of [...old, ...kept]) expect(await b.claim(key, LONG)).toEqual({ status: 'duplicate' })
      const before = generationTables(path)
      clock.now += 2 * 60_000
      // a drops the expired generations; each counts its records.
      expect(a.purgeExpired()).toBeGreaterThanOrEqual(200)
      const after = generationTables(path)
      expect(after.length).toBeLessThan(before.length)
      expect(after.length).toBeGreaterThanOrEqual(3)
      // b still holds the dropped generations' hashes: its next batch reads the list again first.
      for (const key of old) expect((await b.claim(key, LONG)).status).toBe('acquired')
      for (const key of kept) expect(await b.claim(key, LONG)).toEqual({ status: 'duplicate' })
      for (const key of old.slice(0, 20)) expect(await b.lookup(key)).not.toBe('done')
    } finally {
      await a.close()
      await b.close()
    }
  })

  it('drops expired generations as it writes, without purgeExpired', async () => {
    const path = newFile()
    let now = Date.now()
    await withStore(new SqliteDedupStore({ path, generationRecords: 100, now: () => now }), async (store) => {
      for (let round = 0; round < 20; round++) {
        await completeAll(store, keys(`r${round}`, 200), 1_000)
        now += 2_000
      }
    })
    // 4,000 records in 100-record generations, each expired 2 s after its round: all but the last few dropped.
    expect(generationTables(path).length).toBeLessThanOrEqual(8)
    expect(count(path, `SELECT count(*) FROM ${TABLE}_done`)).toBeLessThanOrEqual(1_000)
  })

  it(
    'spreads the drops of a backlog: expired generations of at most 20 times the records written since the last drop, the first at once, and all of it goes',
    async () => {
      const path = newFile()
      let now = Date.now()
      // durability 'normal': no fsync per batch, nothing here is about the disk (86,000 events; in a loaded
      // matrix run, syncing them took past the test's 30 s).
      await withStore(new SqliteDedupStore({ path, generationRecords: 20_000, durability: 'normal', now: () => now }), async (store) => {
        // Sealed at 20,000 to 22,000 records (the table is counted every 2,000): a drop costs 1,000 to 1,100 records written.
        await completeAll(store, keys('old', 82_000), 1_000, 500)
        const backlog = generationTables(path).length
        expect(backlog).toBeGreaterThanOrEqual(3)
        // A purge step the last batches asked for runs at the next turns: before the clock moves, or its
        // writes (up to a batch of 500) would be credit beside the quiet time's, and pay for a second drop.
        for (let turn = 0; turn < 3; turn++) await new Promise((resolve) => setImmediate(resolve))
        now += 2_000
        // Four purge steps (one per 256 rows written: a lease and a done record an event, batches of 50).
        // The credit kept through the quiet time pays for the first drop at once; one drop a step would
        // have taken 3 or 4 (all of them) by now. 1,000 + 600 records written pay for one drop; a second
        // only if a step the last old batches asked for was put off (the checkpointer holding the
        // commits) and its writes came along.
        await completeAll(store, keys('new-a', 600), HOUR, 50)
        const dropped = backlog - generationTables(path).length
        expect(dropped).toBeGreaterThanOrEqual(1)
        expect(dropped).toBeLessThanOrEqual(2)
        expect(dropped).toBeLessThan(backlog)
        await completeAll(store, keys('new-b', 1_100 * backlog + 600), HOUR, 50)
        expect(generationTables(path)).toEqual([])
      })
    },
    scaled(60_000),
  )

  it('processes sharing a file with different generationRecords drop what they seal together (each drop paid in the records it frees)', async () => {
    const path = newFile()
    let now = Date.now()
    // One seals every 100 records, the other at 50,000; each writes half the events, which expire a second later.
    const small = new SqliteDedupStore({ path, generationRecords: 100, now: () => now })
    const large = new SqliteDedupStore({ path, now: () => now })
    let n = 0
    const one = async (store: SqliteDedupStore) => {
      const claim = await store.claim(`default:mixed-${n++}`, { leaseMs: 60_000, retentionMs: 1_000 })
      if (claim.status !== 'acquired') throw new Error(`claim: ${claim.status}`)
      await store.complete(claim.claim, { retentionMs: 1_000 })
    }
    try {
      for (let round = 0; round < 20; round++) {
        for (let i = 0; i < 2_000; i += 50) await Promise.all(Array.from({ length: 50 }, (_, j) => one(j % 2 === 0 ? small : large)))
        now += 2_000
      }
    } finally {
      await small.close()
      await large.close()
    }
    // About 20 a round are sealed; paced by each process's own generation size, 96 were listed after 20 rounds and growing.
    expect(count(path, `SELECT count(*) FROM ${TABLE}_gen`)).toBeLessThanOrEqual(40)
  })

  it('does not seal records that already expired: they are deleted from the current table first', async () => {
    const path = newFile()
    let now = Date.now()
    await withStore(new SqliteDedupStore({ path, generationRecords: 100, now: () => now }), async (store) => {
      // 90 records (under a generation), expired before the next batch reaches 100.
      await completeAll(store, keys('short', 90), 1_000, 90)
      now += 2_000
      await completeAll(store, keys('long', 20), HOUR, 20)
    })
    expect(generationTables(path)).toEqual([])
    expect(count(path, `SELECT count(*) FROM ${TABLE}_now`)).toBe(20)
  })

  it('hashes a sealed generation after its seal, HASH_CHUNK keys a write batch, stores the hashes once, and finds every key meanwhile', async () => {
    const path = newFile()
    let sealed: string[] = []
    const stored = () => count(path, `SELECT count(*) FROM ${TABLE}_gen WHERE id = 1 AND length(hashes) = 4 * records`)
    const other = new SqliteDedupStore({ path })
    await withStore(new SqliteDedupStore({ path, generationRecords: 2_500 }), async (store) => {
      sealed = await completeUntilSealed(store, path, 'chunked')
      // Sealed in the last batch (2,500 to 2,999 records: the table is counted every 250), its hashes to come: its keys are found by SQL meanwhile.
      expect(generationTables(path)).toEqual([`${TABLE}_g1`])
      expect(
        count(
          path,
          `SELECT count(*) FROM ${TABLE}_gen WHERE id = 1 AND records = ? AND hashes IS NULL AND expires_max IS NULL`,
          sealed.length,
        ),
      ).toBe(1)
      expect(sealed.length).toBeLessThan(3_000)
      for (const key of sealed) expect(await store.claim(key, LONG)).toEqual({ status: 'duplicate' })
      // HASH_CHUNK keys hashed in each write batch (a claim's and a complete's here); the batch whose read comes back short stores them.
      const batches = Math.floor(sealed.length / HASH_CHUNK) + 1
      let events = 0
      for (; stored() === 0; events++) {
        if (events === batches) throw new Error(`not stored after ${events} events`)
        await completeAll(store, keys(`step-${events}`, 1), HOUR, 1)
        if (events === 0) {
          // A store on the file without this one's memory of recent keys: its first batch's claims find them by SQL (its batches hash too).
          expect(stored()).toBe(0)
          for (const key of sealed) expect(await other.claim(key, LONG)).toEqual({ status: 'duplicate' })
        }
      }
      expect(count(path, `SELECT expires_max FROM ${TABLE}_gen WHERE id = 1`)).toBe(count(path, `SELECT max(expires_at) FROM ${TABLE}_g1`))
      for (const key of sealed) expect(await store.claim(key, LONG)).toEqual({ status: 'duplicate' })
      for (const key of keys('fresh', 200)) expect((await store.claim(key, LONG)).status).toBe('acquired')
    })
    await other.close()
    // A new process's store loads the stored hashes.
    await withStore(new SqliteDedupStore({ path }), async (store) => {
      for (const key of sealed) expect(await store.claim(key, LONG)).toEqual({ status: 'duplicate' })
    })
  })

  it('a generation its sealer left unhashed is hashed by another process, and dropped only once its latest expiry is known and past', async () => {
    const path = newFile()
    const clock = { now: Date.now() }
    const sealer = new SqliteDedupStore({ path, generationRecords: 1_500, now: () => clock.now })
    const short = await completeUntilSealed(sealer, path, 'short-lived', 60_000)
    await sealer.close()
    expect(short.length).toBeLessThan(2_000)
    expect(count(path, `SELECT count(*) FROM ${TABLE}_gen WHERE hashes IS NULL`)).toBe(1)
    await withStore(new SqliteDedupStore({ path, generationRecords: 1_500, now: () => clock.now }), async (other) => {
      clock.now += 2 * 60_000
      // Its latest expiry is not known yet: not dropped, whatever the clock says.
      other.purgeExpired()
      expect(generationTables(path)).toEqual([`${TABLE}_g1`])
      // Its write batches hash its keys, HASH_CHUNK each, and store them; the purge then drops it.
      await completeAll(other, keys('later', Math.floor(short.length / HASH_CHUNK) + 1), HOUR, 1)
      expect(count(path, `SELECT count(*) FROM ${TABLE}_gen WHERE hashes IS NOT NULL AND expires_max IS NOT NULL`)).toBe(1)
      expect(other.purgeExpired()).toBeGreaterThanOrEqual(short.length)
      expect(generationTables(path)).toEqual([])
      for (const key of short.slice(0, 100)) expect((await other.claim(key, LONG)).status).toBe('acquired')
    })
  })

  it('hashes every key however it sorts: the empty key, a lone surrogate ending a chunk, and the keys after it', async () => {
    const path = newFile()
    // In byte order: '', HASH_CHUNK - 2 keys, the lone surrogate (read back as other text) ending the first chunk, then one just above it.
    const after = 'default:z\ue000'
    const done = ['', ...keys('a', HASH_CHUNK - 2), 'default:z\ud800', after, ...keys('{', 60)]
    await withStore(new SqliteDedupStore({ path, generationRecords: done.length - 10 }), async (store) => {
      await completeAll(store, done, HOUR, done.length)
      expect(generationTables(path)).toEqual([`${TABLE}_g1`])
      await completeAll(store, keys('steps', 3), HOUR, 1)
    })
    expect(count(path, `SELECT count(*) FROM ${TABLE}_gen WHERE length(hashes) = 4 * ? AND records = ?`, done.length, done.length)).toBe(1)
    // A new process's store knows them through the stored hashes alone.
    await withStore(new SqliteDedupStore({ path }), async (store) => {
      for (const key of ['', after, ...done.slice(-60)]) expect(await store.claim(key, LONG)).toEqual({ status: 'duplicate' })
    })
  })

  it('a generation hashed in a batch whose seal then failed is hashed again and stored, so it is dropped once expired', async () => {
    const path = newFile()
    const clock = { now: Date.now() }
    const warnings: string[] = []
    const size = HASH_CHUNK + 50
    const open = () =>
      new SqliteDedupStore({ path, generationRecords: size, now: () => clock.now, warn: (message) => warnings.push(message) })
    await withStore(open(), async (store) => {
      const first = keys('first', size)
      await completeAll(store, first, 60_000, size)
      expect(generationTables(path)).toEqual([`${TABLE}_g1`])
      // The next claims' batch hashes HASH_CHUNK keys of generation 1, the completes' batch the rest
      // and stores them, then its seal of generation 2 fails: the store rolls back with the seal.
      const blocker = new Database(path)
      blocker.exec(`CREATE TABLE ${TABLE}_g2 (x INTEGER)`)
      await completeAll(store, keys('second', size), 60_000, size)
      expect(warnings).toHaveLength(1)
      expect(count(path, `SELECT count(*) FROM ${TABLE}_gen WHERE id = 1 AND hashes IS NULL`)).toBe(1)
      blocker.exec(`DROP TABLE ${TABLE}_g2`)
      blocker.close()
      await completeAll(store, keys('third', 4), 60_000, 1)
      expect(count(path, `SELECT count(*) FROM ${TABLE}_gen WHERE id = 1 AND hashes IS NOT NULL AND expires_max IS NOT NULL`)).toBe(1)
      for (const key of first) expect(await store.claim(key, LONG)).toEqual({ status: 'duplicate' })
      clock.now += 2 * 60_000
      expect(store.purgeExpired()).toBeGreaterThanOrEqual(size)
      expect(generationTables(path)).not.toContain(`${TABLE}_g1`)
    })
  })

  it('a hash step that fails is told once, the seals go on, every key is found by SQL, and the hashes are stored once it works', async () => {
    const path = newFile()
    const warnings: string[] = []
    const blocked = new Database(path)
    await withStore(new SqliteDedupStore({ path, generationRecords: 100, warn: (message) => warnings.push(message) }), async (store) => {
      // The store of the hashes fails (a trigger refuses it); the seal's own insert does not.
      blocked.exec(`CREATE TRIGGER no_hashes BEFORE UPDATE ON ${TABLE}_gen BEGIN SELECT RAISE(ABORT, 'no hashes here'); END`)
      const done = keys('unhashed', 500)
      await completeAll(store, done)
      expect(warnings).toHaveLength(1)
      expect(warnings[0]).toMatch(/hashing a sealed generation of done records failed \(no hashes here\); nothing is lost/)
      expect(generationTables(path).length).toBeGreaterThanOrEqual(4)
      expect(count(path, `SELECT count(*) FROM ${TABLE}_gen WHERE hashes IS NOT NULL`)).toBe(0)
      await withStore(new SqliteDedupStore({ path }), async (other) => {
        for (const key of done) expect(await other.claim(key, LONG)).toEqual({ status: 'duplicate' })
      })
      blocked.exec('DROP TRIGGER no_hashes')
      await completeAll(store, keys('later', 20), HOUR, 1)
      expect(count(path, `SELECT count(*) FROM ${TABLE}_gen WHERE hashes IS NULL`)).toBe(0)
      expect(warnings).toHaveLength(1)
    })
    blocked.close()
  })

  it('a hash step whose error ended the whole transaction fails its batch: no seal is left half made outside it', async () => {
    const path = newFile()
    await new SqliteDedupStore({ path }).close()
    const db = new Database(path)
    const generations = new Generations(db as unknown as ConstructorParameters<typeof Generations>[0], TABLE, { generationRecords: 300 })
    const insert = db.prepare(`INSERT INTO ${TABLE}_now (key, expires_at) VALUES (?, ?)`)
    // As the store's batch (index.ts): the seal and the hash step in a savepoint of their own.
    const seal = db.transaction((written: number, now: number) => generations.wrote(written, now))
    const batch = db.transaction((batchKeys: string[], now: number) => {
      generations.sync(now)
      for (const key of batchKeys) insert.run(key, now + HOUR)
      try {
        seal(batchKeys.length, now)
      } catch (error) {
        generations.sealFailed(error)
      }
    }).immediate
    const now = Date.now()
    batch(keys('first', 1_000), now) // seals generation 1: 1,000 keys, 4 chunks and an empty read to hash
    batch(keys('current', 299), now) // chunk 1; the table counted: 299, not full
    batch(['default:current-last'], now) // chunk 2; 300 now, counted again only 30 records on
    batch([], now) // chunk 3
    batch([], now) // chunk 4
    const other = new Database(path)
    other.exec(`CREATE TRIGGER gen_update BEFORE UPDATE ON ${TABLE}_gen BEGIN SELECT RAISE(ROLLBACK, 'the disk is full'); END;
      CREATE TRIGGER gen_insert BEFORE INSERT ON ${TABLE}_gen BEGIN SELECT RAISE(ABORT, 'the disk is full'); END;`)
    // The last hash step stores the hashes: the whole transaction ends there. Were the error swallowed,
    // the seal due in this batch (40 records counted) would rename the current table outside any transaction.
    expect(() => batch(keys('failing', 40), now)).toThrow()
    generations.invalidate()
    other.exec('DROP TRIGGER gen_update; DROP TRIGGER gen_insert')
    other.close()
    db.close()
    expect(generationTables(path)).toEqual([`${TABLE}_g1`])
    expect(count(path, `SELECT count(*) FROM ${TABLE}_now`)).toBe(300)
    await withStore(new SqliteDedupStore({ path }), async (store) => {
      for (const key of ['default:current-last', ...keys('current', 299), ...keys('first', 1_000)]) {
        expect(await store.claim(key, LONG)).toEqual({ status: 'duplicate' })
      }
    })
  })

  it('a generation whose every record expired is neither indexed nor read: met later (sealed by another process) or at open', async () => {
    const path = newFile()
    await new SqliteDedupStore({ path }).close()
    const db = new Database(path)
    const open = () => new Generations(db as unknown as ConstructorParameters<typeof Generations>[0], TABLE, { generationRecords: 300 })
    const insert = db.prepare(`INSERT INTO ${TABLE}_now (key, expires_at) VALUES (?, ?)`)
    // As the store's batch (index.ts), with its own clock.
    const batchOf = (generations: Generations) => {
      const seal = db.transaction((written: number, now: number) => generations.wrote(written, now))
      return db.transaction((batchKeys: string[], now: number) => {
        generations.sync(now)
        for (const key of batchKeys) insert.run(key, now + HOUR)
        seal(batchKeys.length, now)
      }).immediate
    }
    const now = Date.now()
    const sealer = open()
    const before = open()
    const stillLive = open()
    db.transaction(() => {
      before.sync(now)
      stillLive.sync(now)
    })()
    const sealing = batchOf(sealer)
    sealing(keys('old', 1_000), now)
    for (let i = 0; sealer.hashing && i < 20; i++) sealing([], now)
    expect(count(path, `SELECT count(*) FROM ${TABLE}_gen WHERE hashes IS NOT NULL AND expires_max = ?`, now + HOUR)).toBe(1)
    // Met after its records' retention: nothing to hash, add or read. Met an instant before it, it is.
    const later = now + 2 * HOUR
    db.transaction(() => {
      before.sync(later)
      stillLive.sync(now + HOUR - 1)
    })()
    expect(before.hashing).toBe(false)
    expect(stillLive.hashing).toBe(true)
    expect(db.transaction(() => before.isDone('default:old-0', later))()).toBe(false)
    expect(db.transaction(() => stillLive.isDone('default:old-0', now + HOUR - 1))()).toBe(true)
    // At open, the same (a hashed generation is loaded whole at open: its keys are in the index or not at all); its purge still drops it.
    const openedBefore = open()
    db.transaction(() => openedBefore.sync(now + HOUR - 1))()
    expect(openedBefore.indexedKeys).toBe(1_000)
    const opened = open()
    db.transaction(() => opened.sync(later))()
    expect(opened.hashing).toBe(false)
    expect(opened.indexedKeys).toBe(0)
    expect(db.transaction(() => opened.purgeRound(1_024, later))()).toBe(1_000)
    expect(generationTables(path)).toEqual([])
    db.close()
  })

  it("the console counts every generation's records and finds a sealed one by its key", async () => {
    const path = newFile()
    const done = keys('console', 450)
    await withStore(new SqliteDedupStore({ path, generationRecords: 100 }), async (store) => completeAll(store, done))
    expect(generationTables(path).length).toBeGreaterThanOrEqual(4)
    const db = new Database(path, { readonly: true })
    try {
      const here = readerHere(db as unknown as Parameters<typeof readerHere>[0])
      const source = sqliteConsoleSource({
        table: TABLE,
        path,
        now: Date.now,
        refused: () => undefined,
        read: async (steps: ReadStep[]) => here(steps),
      })
      const facts = await source.overview(Date.now(), HOUR)
      expect(facts.figures.find((figure) => figure.label === 'Events remembered as done')?.value).toBe(450)
      expect((await source.record(done[0] as string, Date.now())).state).toBe('done')
      expect((await source.record('default:never', Date.now())).state).toBe('absent')
    } finally {
      db.close()
    }
  })

  it('a seal that fails is told once through warn; the batch and every answer stay right, and a later check seals', async () => {
    const path = newFile()
    const warnings: string[] = []
    await withStore(new SqliteDedupStore({ path, generationRecords: 100, warn: (message) => warnings.push(message) }), async (store) => {
      // A table in the way of generation 1's name: the rename fails inside the seal's savepoint.
      const other = new Database(path)
      other.exec(`CREATE TABLE ${TABLE}_g1 (x INTEGER)`)
      other.close()
      const first = keys('blocked', 300)
      await completeAll(store, first)
      expect(warnings).toHaveLength(1)
      expect(warnings[0]).toMatch(/sealing a generation of done records failed \(.*already another table.*\); nothing is lost/)
      expect(generationTables(path)).toEqual([`${TABLE}_g1`])
      for (const key of first) expect(await store.claim(key, LONG)).toEqual({ status: 'duplicate' })
      const cleared = new Database(path)
      cleared.exec(`DROP TABLE ${TABLE}_g1`)
      cleared.close()
      await completeAll(store, keys('after', 50))
      expect(count(path, `SELECT count(*) FROM ${TABLE}_gen`)).toBe(1)
      expect(count(path, `SELECT records FROM ${TABLE}_gen WHERE id = 1`)).toBeGreaterThanOrEqual(300)
      for (const key of first) expect(await store.claim(key, LONG)).toEqual({ status: 'duplicate' })
      expect(warnings).toHaveLength(1)
    })
  })

  it('moves a file of the one-table layout (version 2) into generation 1, hashed, keeping every record', async () => {
    const path = newFile()
    const done = keys('v2', 500)
    writeVersion2File(path, done)
    await withStore(new SqliteDedupStore({ path, generationRecords: 100 }), async (store) => {
      for (const key of done) expect(await store.claim(key, LONG)).toEqual({ status: 'duplicate' })
      expect((await store.claim('default:new-after-upgrade', LONG)).status).toBe('acquired')
    })
    expect(generationTables(path)).toEqual([`${TABLE}_g1`])
    expect(count(path, `SELECT count(*) FROM ${TABLE}_gen WHERE id = 1 AND hashes IS NOT NULL AND records = 500`)).toBe(1)
  })

  it('a process of the older release on the file fails its claims once it was upgraded, rather than miss sealed records', async () => {
    const path = newFile()
    writeVersion2File(path, keys('v2', 10))
    // The statements a 0.2 store prepared at its start, on its one table.
    const older = new Database(path)
    const findDone = older.prepare(`SELECT expires_at FROM ${TABLE} WHERE key = ?`)
    expect(findDone.get('default:v2-1')).toBeDefined()
    await new SqliteDedupStore({ path }).close()
    expect(() => findDone.get('default:v2-1')).toThrow(/no such column: expires_at/)
    older.close()
    // 0.1.0 reads no stamp and makes its tables with CREATE … IF NOT EXISTS, then prepares its statements.
    const v010 = new Database(path)
    v010.exec(`CREATE TABLE IF NOT EXISTS ${TABLE} (key TEXT PRIMARY KEY NOT NULL, expires_at INTEGER NOT NULL) WITHOUT ROWID`)
    expect(() => v010.prepare(`SELECT expires_at FROM ${TABLE} WHERE key = ?`)).toThrow(/no such column: expires_at/)
    v010.close()
  })

  it('another process seals a generation under an id this one knew before it was dropped: its new keys are found', async () => {
    const path = newFile()
    const { a, b, clock } = twoStores(path)
    try {
      await completeAll(b, keys('first', 120), 60_000)
      // a loads generation 1.
      expect(await a.lookup('default:first-0')).toBe('done')
      clock.now += 120_000
      expect(b.purgeExpired()).toBeGreaterThanOrEqual(100)
      const second = keys('second', 120)
      await completeAll(b, second, HOUR)
      expect(generationTables(path)).toEqual([`${TABLE}_g1`])
      // Same id, another generation: a must not keep the first one's hashes.
      for (const key of second.slice(0, 100)) expect(await a.claim(key, LONG)).toEqual({ status: 'duplicate' })
    } finally {
      await a.close()
      await b.close()
    }
  })

  it('finds a sealed key with a lone surrogate (stored in bytes that read back as other text) by SQL', async () => {
    const path = newFile()
    const odd = 'default:odd-\ud800-key'
    await withStore(new SqliteDedupStore({ path, generationRecords: 100 }), async (store) => {
      await completeAll(store, [odd])
      expect(await store.claim(odd, LONG)).toEqual({ status: 'duplicate' })
      await completeAll(store, keys('filler', 150))
    })
    expect(generationTables(path)).toEqual([`${TABLE}_g1`])
    await withStore(new SqliteDedupStore({ path }), async (store) => {
      expect(await store.claim(odd, LONG)).toEqual({ status: 'duplicate' })
      expect((await store.claim('default:odd-\udc00-other', LONG)).status).toBe('acquired')
    })
  })

  it("seals beside an app's view that no longer works (SQLite would re-check it at a rename)", async () => {
    const path = newFile()
    const warnings: string[] = []
    const app = new Database(path)
    app.exec('CREATE TABLE app_t (x INTEGER); CREATE VIEW app_v AS SELECT x FROM app_t; DROP TABLE app_t;')
    app.close()
    await withStore(new SqliteDedupStore({ path, generationRecords: 100, warn: (m) => warnings.push(m) }), async (store) => {
      await completeAll(store, keys('beside-view', 150))
    })
    expect(warnings).toEqual([])
    expect(generationTables(path)).toEqual([`${TABLE}_g1`])
  })

  it('a large file of the one-table layout stays unhashed in generation 1, read by SQL, purged row by row, and dropped once empty', {
    timeout: 120_000,
  }, async () => {
    const path = newFile()
    const now = Date.now()
    // Past the 1,000,000 records hashed at upgrade: 1,000,001, of which 1,000 live for an hour.
    writeVersion2File(path, keys('live', 1_000), 1_000_000, now)
    let clock = now
    await withStore(new SqliteDedupStore({ path, now: () => clock }), async (store) => {
      expect(count(path, `SELECT count(*) FROM ${TABLE}_gen WHERE id = 1 AND hashes IS NULL`)).toBe(1)
      for (const key of keys('live', 1_000)) expect(await store.claim(key, LONG)).toEqual({ status: 'duplicate' })
      // The purge's steps (after the claims above) walked part of it already.
      expect(store.purgeExpired()).toBeGreaterThan(900_000)
      expect(count(path, `SELECT count(*) FROM ${TABLE}_g1`)).toBe(1_000)
      expect(generationTables(path)).toEqual([`${TABLE}_g1`])
      for (const key of keys('live', 1_000)) expect(await store.claim(key, LONG)).toEqual({ status: 'duplicate' })
      clock += 2 * HOUR
      expect(store.purgeExpired()).toBe(1_000)
      expect(generationTables(path)).toEqual([])
      expect((await store.claim('default:live-1', LONG)).status).toBe('acquired')
    })
  })

  it('refuses a table of that name that is not the store’s, and a generationRecords under 100', () => {
    const path = newFile()
    const db = new Database(path)
    db.exec(`CREATE TABLE ${TABLE} (id INTEGER PRIMARY KEY, name TEXT)`)
    db.close()
    expect(() => new SqliteDedupStore({ path })).toThrow(/table email_webhook_dedup exists but is not the store's/)
    // An app's table with the store's two columns and one more, or without the store's lease table beside it: refused, not moved.
    for (const sql of [
      `CREATE TABLE ${TABLE} (key TEXT PRIMARY KEY, value TEXT, expires_at INTEGER)`,
      `CREATE TABLE ${TABLE} (key TEXT PRIMARY KEY, expires_at INTEGER)`,
    ]) {
      const other = newFile()
      const app = new Database(other)
      app.exec(sql)
      app.close()
      expect(() => new SqliteDedupStore({ path: other })).toThrow(/table email_webhook_dedup exists but is not the store's/)
      expect(count(other, `SELECT count(*) FROM sqlite_master WHERE name = '${TABLE}'`)).toBe(1)
    }
    for (const generationRecords of [99, 1.5, Number.NaN]) {
      const error = (() => {
        try {
          new SqliteDedupStore({ path: newFile(), generationRecords })
        } catch (caught) {
          return caught
        }
      })()
      expect(error).toBeInstanceOf(DedupStoreError)
      expect((error as DedupStoreError).code).toBe('invalid_options')
    }
  })
})

/**
 * A file as 0.2 (schema version 2) left it, as far as done records go: one table of them, `done`
 * live for an hour and `expired` more that expired an hour ago, the lease table and the stamp (the
 * setup adds the order and inbox tables, whose layout did not change for version 3).
 */
function writeVersion2File(path: string, done: string[], expired = 0, now = Date.now()): void {
  const db = new Database(path)
  db.pragma('journal_mode = WAL')
  db.exec(`CREATE TABLE ${TABLE} (key TEXT PRIMARY KEY NOT NULL, expires_at INTEGER NOT NULL) WITHOUT ROWID;
    CREATE TABLE ${TABLE}_lease (key TEXT PRIMARY KEY NOT NULL, token TEXT, attempt INTEGER NOT NULL, expires_at INTEGER NOT NULL) WITHOUT ROWID;
    CREATE TABLE ${TABLE}_schema (id INTEGER PRIMARY KEY NOT NULL CHECK (id = 1), version INTEGER NOT NULL, written_by TEXT NOT NULL);
    INSERT INTO ${TABLE}_schema VALUES (1, 2, '@email-webhooks/core 0.2.0');`)
  const insert = db.prepare(`INSERT INTO ${TABLE} (key, expires_at) VALUES (?, ?)`)
  db.transaction(() => {
    for (const key of done) insert.run(key, now + HOUR)
  })()
  if (expired > 0) {
    db.prepare(
      `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
       INSERT INTO ${TABLE} (key, expires_at) SELECT 'default:expired-' || i, ? FROM n`,
    ).run(expired, now - HOUR)
  }
  db.close()
}
