import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DedupStoreError } from '@email-webhooks/core'
import { SqliteDedupStore } from '@email-webhooks/core/sqlite'
import { createTestClock } from '@email-webhooks/core/testing'
import { afterAll, describe, expect, it } from 'vitest'

// The SQLite store's edges: every failure is a DedupStoreError with a code and an actionable
// message, options that are not whole milliseconds are refused, and lookup() reads a key's state.

type Raw = { exec(sql: string): void; close(): void }
const Database = createRequire(import.meta.url)('better-sqlite3') as new (path: string) => Raw

const dir = mkdtempSync(join(tmpdir(), 'email-webhooks-sqlite-edges-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
let files = 0
const newFile = () => join(dir, `edges-${files++}.db`)
const LONG = { leaseMs: 60_000, retentionMs: 3_600_000 }
/** A `--require` preload that makes better-sqlite3 impossible to load. */
const NO_SQLITE_DRIVER = join(import.meta.dirname, '../pipeline/no-sqlite-driver.cjs')

/** The error `fn` throws (or its promise rejects with). */
async function failure(fn: () => unknown): Promise<DedupStoreError> {
  try {
    await fn()
  } catch (error) {
    expect(error).toBeInstanceOf(DedupStoreError)
    return error as DedupStoreError
  }
  throw new Error('expected a failure')
}

describe('SqliteDedupStore options', () => {
  it.each([
    ['leaseMs', 1500.5],
    ['leaseMs', 0],
    ['leaseMs', Number.NaN],
    ['retentionMs', 1.5],
    ['retentionMs', -1],
  ])('refuses a claim with %s = %s as invalid_options', async (name, value) => {
    const store = new SqliteDedupStore({ path: newFile() })
    try {
      const error = await failure(() => store.claim('k', { ...LONG, [name]: value }))
      expect(error.code).toBe('invalid_options')
      expect(error.message).toContain(name)
      expect(error.message).toMatch(/whole number of milliseconds/)
    } finally {
      await store.close()
    }
  })

  it('refuses a complete whose retentionMs is not whole milliseconds, and keeps the claim', async () => {
    const store = new SqliteDedupStore({ path: newFile() })
    try {
      const claimed = await store.claim('k', LONG)
      if (claimed.status !== 'acquired') throw new Error(claimed.status)
      expect((await failure(() => store.complete(claimed.claim, { retentionMs: 1000.25 }))).code).toBe('invalid_options')
      expect(await store.complete(claimed.claim, { retentionMs: 1_000 })).toBe(true)
    } finally {
      await store.close()
    }
  })

  it('refuses bad constructor options with invalid_options', async () => {
    expect((await failure(() => new SqliteDedupStore({ path: '' }))).code).toBe('invalid_options')
    expect((await failure(() => new SqliteDedupStore({ path: newFile(), table: 'no-dashes' }))).code).toBe('invalid_options')
    expect((await failure(() => new SqliteDedupStore({ path: newFile(), busyTimeoutMs: 0.5 }))).code).toBe('invalid_options')
    // 2 ** 31 ms and more: Node would fire such a timer at once.
    for (const closeTimeoutMs of [0, 1.5, 2 ** 31, Number.POSITIVE_INFINITY]) {
      const error = await failure(() => new SqliteDedupStore({ path: newFile(), closeTimeoutMs }))
      expect(error.code).toBe('invalid_options')
      expect(error.message).toContain('closeTimeoutMs must be a whole number of milliseconds from 1 to 2147483647')
    }
    // @ts-expect-error an unknown durability
    expect((await failure(() => new SqliteDedupStore({ path: newFile(), durability: 'fast' }))).code).toBe('invalid_options')
    // @ts-expect-error warn is a function
    expect((await failure(() => new SqliteDedupStore({ path: newFile(), warn: 'console' }))).code).toBe('invalid_options')
  })
})

describe('SqliteDedupStore failures are DedupStoreErrors', () => {
  it('names the path and the OS error when the folder is missing (misconfigured)', async () => {
    const path = join(dir, 'missing', 'dedup.db')
    const error = await failure(() => new SqliteDedupStore({ path }))
    expect(error.code).toBe('misconfigured')
    expect(error.message).toContain(path)
    expect(error.message).toMatch(/ENOENT/)
  })

  it('names the path and the OS error when a parent is a file (misconfigured)', async () => {
    const parent = join(dir, 'a-file')
    writeFileSync(parent, 'not a folder')
    const error = await failure(() => new SqliteDedupStore({ path: join(parent, 'dedup.db') }))
    expect(error.code).toBe('misconfigured')
    expect(error.message).toMatch(/ENOTDIR/)
  })

  it('says a file that is not a database is corrupt and what to do (misconfigured)', async () => {
    const path = newFile()
    writeFileSync(path, Buffer.alloc(8192, 7))
    const error = await failure(() => new SqliteDedupStore({ path }))
    expect(error.code).toBe('misconfigured')
    expect(error.message).toContain(path)
    expect(error.message).toMatch(/not a SQLite database or it is corrupt: move it away/)
  })

  it('answers command_failed naming busyTimeoutMs when another connection holds the lock too long', async () => {
    const path = newFile()
    const store = new SqliteDedupStore({ path, busyTimeoutMs: 20 })
    const other = new Database(path)
    try {
      other.exec('BEGIN IMMEDIATE')
      const error = await failure(() => store.claim('locked', LONG))
      expect(error.code).toBe('command_failed')
      expect(error.message).toMatch(/SQLITE_BUSY.*busyTimeoutMs/)
      other.exec('ROLLBACK')
      expect((await store.claim('locked', LONG)).status).toBe('acquired')
    } finally {
      other.close()
      await store.close()
    }
  })

  it('rejects every method with code closed once closed', async () => {
    const store = new SqliteDedupStore({ path: newFile() })
    const claimed = await store.claim('k', LONG)
    if (claimed.status !== 'acquired') throw new Error(claimed.status)
    await store.close()
    for (const call of [
      () => store.claim('k', LONG),
      () => store.complete(claimed.claim, LONG),
      () => store.release(claimed.claim),
      () => store.lookup('k'),
      () => store.purgeExpired(),
    ]) {
      const error = await failure(call)
      expect(error.code).toBe('closed')
      expect(error.message).toMatch(/was closed; open a new one/)
    }
  })

  it('answers driver_missing with the install command when better-sqlite3 cannot load', () => {
    // A child process in which requiring better-sqlite3 fails, as in an app that did not install it.
    const script = `
      const { SqliteDedupStore } = require('@email-webhooks/core/sqlite')
      const { DedupStoreError } = require('@email-webhooks/core')
      try { new SqliteDedupStore({ path: ${JSON.stringify(newFile())} }) } catch (error) {
        console.log(JSON.stringify({ same: error instanceof DedupStoreError, code: error.code, message: error.message }))
      }`
    const out = JSON.parse(
      execFileSync(process.execPath, ['--require', NO_SQLITE_DRIVER, '-e', script], { cwd: import.meta.dirname, encoding: 'utf8' }),
    )
    expect(out).toMatchObject({ same: true, code: 'driver_missing' })
    expect(out.message).toContain('npm install better-sqlite3')
  })
})

describe('SqliteDedupStore lookup', () => {
  it("reads 'absent', 'in_flight' and 'done' without changing the key", async () => {
    const clock = createTestClock(1_800_000_000_000)
    const store = new SqliteDedupStore({ path: newFile(), now: clock.now })
    try {
      expect(await store.lookup('k')).toBe('absent')
      const claimed = await store.claim('k', { leaseMs: 1_000, retentionMs: 5_000 })
      if (claimed.status !== 'acquired') throw new Error(claimed.status)
      expect(await store.lookup('k')).toBe('in_flight')
      expect(await store.lookup('k')).toBe('in_flight')
      clock.advance(1_000)
      expect(await store.lookup('k')).toBe('absent') // the lease lapsed
      clock.advance(-1_000)
      expect(await store.complete(claimed.claim, { retentionMs: 5_000 })).toBe(true)
      expect(await store.lookup('k')).toBe('done')
      clock.advance(5_000)
      expect(await store.lookup('k')).toBe('absent') // retention ended
      const released = await store.claim('r', LONG)
      if (released.status !== 'acquired') throw new Error(released.status)
      expect(await store.release(released.claim)).toBe(true)
      expect(await store.lookup('r')).toBe('absent')
    } finally {
      await store.close()
    }
  })

  it("sees 'done' written by another connection to the same file", async () => {
    const path = newFile()
    const writer = new SqliteDedupStore({ path })
    const reader = new SqliteDedupStore({ path })
    try {
      const claimed = await writer.claim('shared', LONG)
      if (claimed.status !== 'acquired') throw new Error(claimed.status)
      expect(await reader.lookup('shared')).toBe('in_flight')
      await writer.complete(claimed.claim, LONG)
      expect(await reader.lookup('shared')).toBe('done')
    } finally {
      await Promise.all([writer.close(), reader.close()])
    }
  })
})

describe('SqliteDedupStore on a file of version 0.1', () => {
  it('moves done records and leases of the one-table layout over, and keeps answering for them', async () => {
    const path = newFile()
    mkdirSync(dir, { recursive: true })
    const old = new Database(path)
    const now = Date.now()
    old.exec(`
      CREATE TABLE email_webhook_dedup (key TEXT PRIMARY KEY NOT NULL, done INTEGER NOT NULL, token TEXT, attempt INTEGER NOT NULL, expires_at INTEGER NOT NULL) WITHOUT ROWID;
      CREATE INDEX email_webhook_dedup_expires_at ON email_webhook_dedup (expires_at);
      INSERT INTO email_webhook_dedup VALUES ('old-done', 1, NULL, 1, ${now + 3_600_000});
      INSERT INTO email_webhook_dedup VALUES ('old-held', 0, 'tok', 2, ${now + 60_000});
      INSERT INTO email_webhook_dedup VALUES ('old-released', 0, NULL, 1, 0);`)
    old.close()
    const store = new SqliteDedupStore({ path })
    try {
      expect(await store.claim('old-done', LONG)).toEqual({ status: 'duplicate' })
      expect((await store.claim('old-held', LONG)).status).toBe('in_flight')
      expect(await store.complete({ key: 'old-held', token: 'tok', attempt: 2 }, LONG)).toBe(true)
      const again = await store.claim('old-released', LONG)
      expect(again.status === 'acquired' && again.claim.attempt).toBe(2)
    } finally {
      await store.close()
    }
  })
})

describe('SqliteDedupStore keys remembered in memory', () => {
  it('answers duplicate for its own completed keys until their retention ends, then lets them be claimed again', async () => {
    const clock = createTestClock(1_800_000_000_000)
    const store = new SqliteDedupStore({ path: newFile(), now: clock.now })
    try {
      const claimed = await store.claim('k', LONG)
      if (claimed.status !== 'acquired') throw new Error(claimed.status)
      await store.complete(claimed.claim, { retentionMs: 5_000 })
      expect(await store.claim('k', LONG)).toEqual({ status: 'duplicate' })
      clock.advance(4_999)
      expect(await store.claim('k', LONG)).toEqual({ status: 'duplicate' })
      clock.advance(1)
      const again = await store.claim('k', LONG)
      expect(again.status === 'acquired' && again.claim.attempt).toBe(1)
    } finally {
      await store.close()
    }
  })

  it('still answers duplicate (from the file) for keys pushed out of memory by 10,000 newer ones', async () => {
    const store = new SqliteDedupStore({ path: newFile(), durability: 'normal' })
    try {
      let next = 0
      const worker = async () => {
        while (next < 10_050) {
          const key = `many-${next++}`
          const claimed = await store.claim(key, LONG)
          if (claimed.status !== 'acquired') throw new Error(`${key} was ${claimed.status}`)
          await store.complete(claimed.claim, LONG)
        }
      }
      await Promise.all(Array.from({ length: 20 }, worker))
      for (const key of ['many-0', 'many-49', 'many-5000', 'many-10049'])
        expect(await store.claim(key, LONG)).toEqual({ status: 'duplicate' })
    } finally {
      await store.close()
    }
  })
})
