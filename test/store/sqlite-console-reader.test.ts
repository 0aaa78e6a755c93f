/**
 * The console's reads of a SQLite store run on a thread of their own (store/sqlite/reader.ts), so
 * that an operator's page over a week of done records never holds up the receiver it is mounted
 * in: better-sqlite3 is synchronous, and on the store's connection the overview of 1,000,000 done
 * records kept the event loop (every webhook answer of the process) waiting ~400 ms. Also: the
 * thread reads what the store committed, a read asked for before close() is answered and a process
 * closing the store with one in flight exits normally, counts are exact across chunks, a store in
 * memory reads on its own connection, and a thread that cannot start leaves every page working
 * (on the store's connection) and says why once.
 */
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DedupStoreError } from '@email-webhooks/core'
import { emailWebhookConsole } from '@email-webhooks/core/console'
import { SqliteDedupStore } from '@email-webhooks/core/sqlite'
import Database from 'better-sqlite3'
import { afterAll, describe, expect, it } from 'vitest'
import { sqliteConsoleSource } from '../../packages/core/src/store/sqlite/console.js'
import { READ_GATE, type ReadStep, readerHere, readOffLoop, SqliteReader } from '../../packages/core/src/store/sqlite/reader.js'
import { driverPath } from '../../packages/core/src/store/sqlite/schema.js'

const dir = mkdtempSync(join(tmpdir(), 'email-webhooks-console-reader-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const TABLE = 'email_webhook_dedup'
const LONG = { leaseMs: 60_000, retentionMs: 3_600_000 }
const AUTH = { authorization: `Basic ${btoa('ops:reader-test-password')}` }
// A long store timeout: these tests ask whether the event loop turns, not how fast a loaded machine makes the page.
const consoleOf = (store: SqliteDedupStore) =>
  emailWebhookConsole({ store, auth: { username: 'ops', password: 'reader-test-password' }, storeTimeoutMs: 60_000 })

/** The store's way of reading (index.ts): on `reader`'s thread, or on `db` when it has none. */
const readVia = (reader: SqliteReader, db: Database.Database) => {
  const here = readerHere(db as unknown as Parameters<typeof readerHere>[0])
  return (steps: ReadStep[]) => readOffLoop(reader, steps, here, () => undefined)
}

/** Adds `count` done records expiring within the day to the store's file, through a connection of the test's own. */
function fill(path: string, count: number): void {
  const db = new Database(path)
  try {
    db.prepare(
      `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
       INSERT INTO ${TABLE}_now (key, expires_at) SELECT 'default:filled-' || i, ? + (i % 86400) * 1000 FROM n`,
    ).run(count, Date.now() + 3_600_000)
  } finally {
    db.close()
  }
}

/** `count` waiting entries in the store's inbox: one enqueued, then copies of it under other keys through a connection of the test's own. */
async function fillInbox(store: SqliteDedupStore, path: string, count: number): Promise<void> {
  await store.inbox?.enqueue(
    { key: 'default:first', type: 'email.bounced', payload: '{}', timestamp: Math.floor(Date.now() / 1000) },
    { retentionMs: 3_600_000 },
  )
  const db = new Database(path)
  try {
    const columns = (db.prepare(`SELECT name FROM pragma_table_info('${TABLE}_inbox')`).pluck().all() as string[]).join(', ')
    const copied = columns.replace(/\bkey\b/, `'default:backlog-' || i`)
    db.prepare(
      `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
       INSERT INTO ${TABLE}_inbox (${columns}) SELECT ${copied} FROM n, (SELECT * FROM ${TABLE}_inbox WHERE key = 'default:first')`,
    ).run(count - 1)
  } finally {
    db.close()
  }
}

/** The page's status and text, how long it took and the longest the event loop was kept from turning meanwhile. */
async function timedPage(handler: (request: Request) => Promise<Response>, path: string) {
  const { value, ms, loopMaxMs } = await timed(async () => {
    const response = await handler(new Request(`http://console${path}`, { headers: AUTH }))
    return { status: response.status, text: await response.text() }
  })
  return { ...value, ms, loopMaxMs }
}

/**
 * What `read` gave, how long it took and the longest the event loop was kept from turning
 * meanwhile (ms): the longest gap between ticks of a 1 ms timer, the last one counted up to the
 * end (a read on the loop is over before any timer can fire).
 */
async function timed<T>(read: () => Promise<T>) {
  let last = performance.now()
  let loopMaxMs = 0
  const tick = setInterval(() => {
    const now = performance.now()
    loopMaxMs = Math.max(loopMaxMs, now - last)
    last = now
  }, 1)
  const started = performance.now()
  try {
    const value = await read()
    const ended = performance.now()
    return { value, ms: ended - started, loopMaxMs: Math.max(loopMaxMs, ended - last) }
  } finally {
    clearInterval(tick)
  }
}

/** The overview's figure of done records, as the page prints it (thousands grouped). */
function doneFigure(html: string): number {
  const match = /Events remembered as done[\s\S]*?([\d,]+)/.exec(html)
  if (!match?.[1]) throw new Error('no done figure on the overview')
  return Number(match[1].replace(/,/g, ''))
}

describe("the SQLite store's console reads", () => {
  it('read 400,000 done records off the event loop: the loop turns while the overview counts them', { timeout: 120_000 }, async () => {
    const path = join(dir, 'big.db')
    const store = new SqliteDedupStore({ path })
    try {
      fill(path, 400_000)
      const handler = consoleOf(store)
      // The first page starts the thread; the second is measured.
      expect(doneFigure((await timedPage(handler, '/')).text)).toBe(400_000)
      const page = await timedPage(handler, '/')
      expect(page.status).toBe(200)
      expect(doneFigure(page.text)).toBe(400_000)
      // On the store's connection the loop waited as long as the page (~160 ms here): now it turns on.
      expect(page.ms).toBeGreaterThan(100)
      expect(page.loopMaxMs).toBeLessThan(page.ms / 2)

      // The thread reads what the store committed since.
      const claim = await store.claim('default:new-one', LONG)
      if (claim.status !== 'acquired') throw new Error('expected acquired')
      await store.complete(claim.claim, LONG)
      expect(doneFigure((await timedPage(handler, '/')).text)).toBe(400_001)
      const found = await timedPage(handler, '/find?q=new-one')
      expect(found.text).toMatch(/done/i)

      // After close() a page says the store did not answer.
      await store.close()
      const after = await handler(new Request('http://console/', { headers: AUTH }))
      expect(await after.text()).toMatch(/did not answer/)
    } finally {
      await store.close()
    }
  })

  it("count an inbox backlog of 500,000 entries off the event loop (the overview's and metrics' stats())", {
    timeout: 120_000,
  }, async () => {
    const path = join(dir, 'backlog.db')
    const store = new SqliteDedupStore({ path })
    try {
      const inbox = store.inbox
      if (!inbox) throw new Error('expected an inbox')
      await fillInbox(store, path, 500_000)
      await inbox.stats()
      const counted = await timed(() => inbox.stats())
      expect(counted.value).toMatchObject({ pending: 500_000, running: 0, dead: 0 })
      expect(counted.ms).toBeGreaterThan(50)
      expect(counted.loopMaxMs).toBeLessThan(counted.ms / 2)
    } finally {
      await store.close()
    }
  })

  it('read a store in memory on its own connection', async () => {
    const store = new SqliteDedupStore({ path: ':memory:' })
    try {
      const claim = await store.claim('default:in-memory', LONG)
      if (claim.status !== 'acquired') throw new Error('expected acquired')
      await store.complete(claim.claim, LONG)
      const page = await timedPage(consoleOf(store), '/')
      expect(page.status).toBe(200)
      expect(doneFigure(page.text)).toBe(1)
    } finally {
      await store.close()
    }
  })

  it('go on, on the store connection, when the thread cannot start, and say why once', async () => {
    const path = join(dir, 'no-thread.db')
    const store = new SqliteDedupStore({ path })
    const db = new Database(path)
    const reasons: string[] = []
    const reader = new SqliteReader({
      path,
      driver: () => join(dir, 'no-such-driver.cjs'),
      busyTimeoutMs: 1_000,
      stopped: (reason) => reasons.push(reason),
    })
    try {
      fill(path, 1_000)
      const source = sqliteConsoleSource({ table: TABLE, path, now: Date.now, refused: () => undefined, read: readVia(reader, db) })
      const first = await source.overview(Date.now(), 3_600_000)
      expect(first.figures[0]).toMatchObject({ label: 'Events remembered as done', value: 1_000 })
      expect(await source.record('default:filled-7', Date.now())).toMatchObject({ state: 'done' })
      expect(reader.running).toBe(false)
      expect(reasons).toHaveLength(1)
      expect(reasons[0]).toMatch(/MODULE_NOT_FOUND|Cannot find module/)
    } finally {
      await reader.close()
      db.close()
      await store.close()
    }
  })

  it("answer a read asked for before the thread's close() from the thread, then stop", async () => {
    const path = join(dir, 'closing.db')
    const store = new SqliteDedupStore({ path })
    const reader = new SqliteReader({ path, driver: driverPath, busyTimeoutMs: 1_000, stopped: () => {} })
    try {
      fill(path, 200_000)
      const whole = { sql: `SELECT count(*) FROM ${TABLE}_now WHERE expires_at > ?`, args: [0], pluck: true }
      // A read the thread drops rejects (ReaderEndedError): only the thread's answer fulfils it.
      const asked = reader.read([whole])
      expect(asked).toBeInstanceOf(Promise)
      await reader.close()
      expect(await asked).toEqual([[200_000]])
      expect(reader.running).toBe(false)
      // After close() there is no thread: the caller reads on the store's connection.
      expect(reader.read([whole])).toBeUndefined()
    } finally {
      await store.close()
    }
  })

  it('let a process that closes the store with a read in flight exit normally, after close() resolved (its threads load under --input-type=module)', {
    timeout: 60_000,
  }, async () => {
    const path = join(dir, 'close-in-flight.db')
    const filler = new SqliteDedupStore({ path })
    await fillInbox(filler, path, 500_000)
    await filler.close()
    // The thread is unreferenced while idle and referenced while a read waits; close() must keep it
    // referenced after that read's answer, or the process ends inside close() (exit code 13).
    const script = `
      import { SqliteDedupStore } from '@email-webhooks/core/sqlite'
      const store = new SqliteDedupStore({ path: ${JSON.stringify(path)} })
      // 1,200 writes: the checkpointer's thread starts too (on more than one CPU), and must load under --input-type=module.
      const opts = { leaseMs: 60_000, retentionMs: 3_600_000 }
      await Promise.all(Array.from({ length: 600 }, async (_, i) => {
        const claimed = await store.claim('default:write-' + i, opts)
        await store.complete(claimed.claim, opts)
      }))
      // Counting the backlog takes the thread about 100 ms: close() comes while it reads.
      const counted = store.inbox.stats()
      await new Promise((resolve) => setTimeout(resolve, 30))
      await store.close()
      console.log('closed', (await counted).pending)
    `
    const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
      cwd: import.meta.dirname,
      encoding: 'utf8',
      timeout: 50_000,
    })
    expect(run.stderr).toBe('')
    expect(run.stdout.trim()).toBe('closed 500000')
    expect(run.status).toBe(0)
  })

  it('count every record across chunk boundaries, the empty key too', async () => {
    const path = join(dir, 'boundaries.db')
    const store = new SqliteDedupStore({ path })
    try {
      // Two chunks exactly (20,000 keys each), one of them the smallest key there is.
      fill(path, 39_999)
      const db = new Database(path)
      db.prepare(`INSERT INTO ${TABLE}_now (key, expires_at) VALUES ('', ?)`).run(Date.now() + 3_600_000)
      db.close()
      const page = await timedPage(consoleOf(store), '/')
      expect(doneFigure(page.text)).toBe(40_000)
      const claim = await store.claim('default:one-more', LONG)
      if (claim.status !== 'acquired') throw new Error('expected acquired')
      await store.complete(claim.claim, LONG)
      expect(doneFigure((await timedPage(consoleOf(store), '/')).text)).toBe(40_001)
    } finally {
      await store.close()
    }
  })

  it("wait for the checkpointer's held pass before a read (a bounded time), and keep it waiting while reading", async () => {
    const path = join(dir, 'gate.db')
    const store = new SqliteDedupStore({ path })
    const gate = new Int32Array(new SharedArrayBuffer(4))
    const readerWaiting = (gateWaitMs: number) =>
      new SqliteReader({
        path,
        driver: driverPath,
        busyTimeoutMs: 1_000,
        stopped: () => {},
        gate: gate.buffer as SharedArrayBuffer,
        gateWaitMs,
      })
    // A wait far longer than the test's own pause, so that a busy machine cannot let the read go on meanwhile.
    const patient = readerWaiting(60_000)
    const hasty = readerWaiting(50)
    const one = [{ sql: 'SELECT 1', args: [], pluck: true }]
    try {
      expect(await patient.read(one)).toEqual([[1]])
      expect(Atomics.load(gate, 0)).toBe(READ_GATE.OPEN)
      // A held pass runs: the read waits for its end.
      Atomics.store(gate, 0, READ_GATE.PASSING)
      let answered = false
      const waiting = patient.read(one)?.then((rows) => {
        answered = true
        return rows
      })
      await new Promise((resolve) => setTimeout(resolve, 50))
      expect(answered).toBe(false)
      Atomics.store(gate, 0, READ_GATE.OPEN)
      Atomics.notify(gate, 0)
      expect(await waiting).toEqual([[1]])
      expect(Atomics.load(gate, 0)).toBe(READ_GATE.OPEN)
      // A pass that does not end: the read goes on after its wait (50 ms here), without the gate.
      Atomics.store(gate, 0, READ_GATE.PASSING)
      const started = performance.now()
      expect(await hasty.read(one)).toEqual([[1]])
      expect(performance.now() - started).toBeGreaterThanOrEqual(45)
      expect(Atomics.load(gate, 0)).toBe(READ_GATE.PASSING)
    } finally {
      await patient.close()
      await hasty.close()
      await store.close()
    }
  })

  it('answer the overview with what it counted in its time budget (part of the console\'s storeTimeoutMs), marked "at least", with a note; the inbox\'s done entries too', async () => {
    const path = join(dir, 'budget.db')
    const store = new SqliteDedupStore({ path })
    const db = new Database(path)
    const reader = new SqliteReader({ path, driver: driverPath, busyTimeoutMs: 1_000, stopped: () => {} })
    try {
      fill(path, 100_000)
      // The inbox's done entries are counted the same way: 30,000 remembered, one past its retention, one dead.
      await fillInbox(store, path, 30_002)
      db.exec(`UPDATE ${TABLE}_inbox SET state = 'done', until = ${Date.now() + 3_600_000} WHERE key NOT IN ('default:backlog-1', 'default:backlog-2');
        UPDATE ${TABLE}_inbox SET state = 'done', until = ${Date.now() - 1_000} WHERE key = 'default:backlog-1';
        UPDATE ${TABLE}_inbox SET state = 'dead' WHERE key = 'default:backlog-2'`)
      const source = sqliteConsoleSource({ table: TABLE, path, now: Date.now, refused: () => undefined, read: readVia(reader, db) })
      const inboxFigure = (facts: { figures: { label: string; value: unknown }[] }) =>
        facts.figures.find((figure) => figure.label === 'Inbox entries handled and remembered')?.value
      // One chunk, then out of time.
      const partly = await source.overview(Date.now(), 3_600_000, 0)
      expect(partly.figures[0]).toMatchObject({ label: 'Events remembered as done', value: 'at least 20,000' })
      expect(partly.recordedByHour?.reduce((sum, h) => sum + h.count, 0)).toBe(20_000)
      expect(inboxFigure(partly)).toMatch(/^at least (19,99\d|20,000)$/)
      expect(partly.notes).toHaveLength(1)
      expect(partly.notes[0]).toMatch(/^Counting stops after [\d.]+ s, so that the page answers/)
      // A budget of a minute counts them all.
      const whole = await source.overview(Date.now(), 3_600_000, 60_000)
      expect(whole.figures[0]).toMatchObject({ value: 100_000 })
      expect(inboxFigure(whole)).toBe(30_000)
      expect(whole.notes).toEqual([])
    } finally {
      await reader.close()
      db.close()
      await store.close()
    }
  })

  it('turn a failed statement of the thread into a typed error that names the file', async () => {
    const path = join(dir, 'failing.db')
    const store = new SqliteDedupStore({ path })
    const db = new Database(path)
    const reader = new SqliteReader({ path, driver: driverPath, busyTimeoutMs: 1_000, stopped: () => {} })
    try {
      const source = sqliteConsoleSource({
        table: 'no_such_table',
        path,
        now: Date.now,
        refused: () => undefined,
        read: readVia(reader, db),
      })
      const error = await source.overview(Date.now(), 3_600_000).then(
        () => undefined,
        (e: unknown) => e,
      )
      expect(error).toBeInstanceOf(DedupStoreError)
      expect(error).toMatchObject({ code: 'command_failed' })
      expect((error as Error).message).toContain(path)
      expect((error as Error).message).toMatch(/no such table/)
      // The thread survives a failed statement.
      expect(reader.running).toBe(true)
    } finally {
      await reader.close()
      db.close()
      await store.close()
    }
  })
})
