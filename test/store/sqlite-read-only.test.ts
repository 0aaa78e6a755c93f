/**
 * `SqliteDedupStore({ readOnly: true })`, as recovery tooling opens a running receiver's file:
 * lookup sees what the receiver's store wrote, nothing is written (no claim, no checkpoint that
 * truncates the receiver's WAL), and a mistyped path is a typed error, never a new empty file.
 */
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DedupStoreError } from '@email-webhooks/core'
import { SqliteDedupStore } from '@email-webhooks/core/sqlite'
import { afterAll, describe, expect, it } from 'vitest'

type Raw = { exec(sql: string): void; close(): void }
const Database = createRequire(import.meta.url)('better-sqlite3') as new (path: string) => Raw

const dir = mkdtempSync(join(tmpdir(), 'email-webhooks-sqlite-ro-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const LONG = { leaseMs: 60_000, retentionMs: 3_600_000 }

async function failure(promise: Promise<unknown>): Promise<DedupStoreError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  )
  expect(error).toBeInstanceOf(DedupStoreError)
  return error as DedupStoreError
}

describe('SqliteDedupStore with readOnly: true', () => {
  it("looks keys up in a running receiver's file, refuses every write, and leaves its WAL alone on close", async () => {
    const path = join(dir, 'live.db')
    const live = new SqliteDedupStore({ path })
    const done = await live.claim('default:done', LONG)
    if (done.status !== 'acquired') throw new Error('expected acquired')
    await live.complete(done.claim, LONG)
    await live.claim('default:held', LONG)
    const walBefore = statSync(`${path}-wal`).size
    expect(walBefore).toBeGreaterThan(0)

    const reader = new SqliteDedupStore({ path, readOnly: true })
    expect(await Promise.all(['default:done', 'default:held', 'default:new'].map((key) => reader.lookup(key)))).toEqual([
      'done',
      'in_flight',
      'absent',
    ])
    const refused = await failure(reader.claim('default:new', LONG))
    expect([refused.code, refused.message]).toEqual(['misconfigured', expect.stringMatching(/readOnly: true, so only lookup\(\) works/)])
    expect((await failure(reader.release({ key: 'default:held', token: 'x', attempt: 1 }))).code).toBe('misconfigured')
    expect((await failure(reader.complete({ key: 'default:held', token: 'x', attempt: 1 }, LONG))).code).toBe('misconfigured')
    await reader.close()
    // Closing a read-write store checkpoints with TRUNCATE: under a running receiver that empties its WAL.
    expect(statSync(`${path}-wal`).size).toBe(walBefore)
    await live.close()
  })

  it('refuses a missing file with a typed error that names it, and creates nothing', () => {
    const path = join(dir, 'mistyped', '..', 'dedpu.db')
    let error: unknown
    try {
      new SqliteDedupStore({ path, readOnly: true })
    } catch (e) {
      error = e
    }
    expect(error).toBeInstanceOf(DedupStoreError)
    expect((error as DedupStoreError).code).toBe('misconfigured')
    expect((error as DedupStoreError).message).toContain(`no SQLite file at ${join(dir, 'dedpu.db')}`)
    expect(existsSync(join(dir, 'dedpu.db'))).toBe(false)
  })

  it('says so when the file is a SQLite database without the dedup tables', () => {
    const path = join(dir, 'other.db')
    const raw = new Database(path)
    raw.exec('CREATE TABLE notes (id INTEGER PRIMARY KEY)')
    raw.close()
    expect(() => new SqliteDedupStore({ path, readOnly: true })).toThrow(/has no dedup table email_webhook_dedup/)
  })
})
