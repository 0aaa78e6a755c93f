/**
 * Inbox mode while the store fails: another connection holds the SQLite file's write lock longer
 * than the store's busy timeout. The web side answers 503 (the sender retries), the worker says
 * once that it pauses and once that it resumes, and every event is handled once in the end.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createReceiver, type WebhookEvent } from '@email-webhooks/core'
import { SqliteDedupStore } from '@email-webhooks/core/sqlite'
import { createSignedDelivery, TEST_SECRET } from '@email-webhooks/core/testing'
import { afterAll, expect, it } from 'vitest'

const dir = mkdtempSync(join(tmpdir(), 'email-webhooks-inbox-outage-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

type Database = { exec(sql: string): void; close(): void }
const Driver = createRequire(import.meta.url)('better-sqlite3') as new (path: string) => Database

/** Another connection takes the file's write lock (as another process writing it would) until `release()`. */
function holdLock(path: string): { release(): void } {
  const db = new Driver(path)
  db.exec('CREATE TABLE IF NOT EXISTS held (x)')
  db.exec('BEGIN IMMEDIATE')
  db.exec('INSERT INTO held VALUES (1)')
  return {
    release() {
      db.exec('COMMIT')
      db.close()
    },
  }
}

async function until(done: () => boolean | Promise<boolean>, what: string, ms = 10_000): Promise<void> {
  const end = Date.now() + ms
  while (!(await done())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

it('answers 503 while the store is locked, pauses and resumes the worker (said once each), and loses nothing', async () => {
  const path = join(dir, 'outage.db')
  const errors: string[] = []
  const warnings: string[] = []
  const handled: WebhookEvent[] = []
  const store = new SqliteDedupStore({ path, busyTimeoutMs: 50 })
  const receiver = createReceiver({
    secret: TEST_SECRET,
    store,
    mode: 'inbox',
    inbox: { worker: false, pollMs: 20 },
    handlers: { 'email.bounced': (event) => void handled.push(event) },
    logger: { error: (m) => void errors.push(m), warn: (m) => void warnings.push(m) },
  })
  try {
    const before = await createSignedDelivery({ type: 'email.bounced' })
    expect((await receiver.receive(before)).outcome).toBe('queued')

    const lock = holdLock(path)
    const during = await createSignedDelivery({ type: 'email.bounced' })
    const refused = await receiver.receive(during)
    expect(refused).toMatchObject({ status: 503, code: 'store_unavailable' })
    expect(refused.headers['retry-after']).toBe('1')
    expect(refused.body).not.toContain(during.body)

    receiver.inbox?.start()
    await until(() => errors.some((line) => line.includes('inbox worker: the store failed')), 'the pause to be logged')
    lock.release()
    await until(() => handled.length === 1, 'the queued event after the lock')
    expect(warnings.filter((line) => line.includes('inbox worker: the store answers again'))).toHaveLength(1)
    expect(errors.filter((line) => line.includes('inbox worker: the store failed'))).toHaveLength(1)
    expect(errors.join('\n')).toContain('busyTimeoutMs')

    // The sender retries the refused delivery: queued now, handled once.
    expect((await receiver.receive(during)).outcome).toBe('queued')
    await until(() => handled.length === 2, 'the retried event')
    expect(handled.map((e) => e.id)).toEqual([before.event.id, during.event.id])
    await until(async () => (await receiver.inbox?.stats())?.running === 0, 'both entries to be finished')
    expect(await receiver.inbox?.stats()).toMatchObject({ pending: 0, running: 0, dead: 0 })
  } finally {
    await receiver.inbox?.stop()
    await store.close()
  }
}, 20_000)
