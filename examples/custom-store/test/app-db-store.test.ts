import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createReceiver } from '@email-webhooks/core'
import { createSignedDelivery, dedupStoreConformance, TEST_SECRET } from '@email-webhooks/core/testing'
import Database from 'better-sqlite3'
import { afterAll, describe, expect, it } from 'vitest'
import { AppDbDedupStore } from '../src/app-db-store.js'

const dir = mkdtempSync(join(tmpdir(), 'custom-store-'))
const db = new Database(join(dir, 'app.db'))
db.pragma('journal_mode = WAL')
afterAll(() => {
  db.close()
  rmSync(dir, { recursive: true, force: true })
})

// The same conformance suite the built-in stores run.
dedupStoreConformance(
  'AppDbDedupStore (examples/custom-store)',
  { describe, it },
  { createStore: () => new AppDbDedupStore(db), closeAfterEach: false },
)

describe('AppDbDedupStore in a receiver', () => {
  it('deduplicates a redelivered event', async () => {
    let runs = 0
    const receiver = createReceiver({
      secret: TEST_SECRET,
      store: new AppDbDedupStore(db),
      handlers: { 'email.bounced': () => void runs++ },
    })
    const delivery = await createSignedDelivery({ type: 'email.bounced' })
    expect((await receiver.receive(delivery)).status).toBe(200)
    expect((await receiver.receive(delivery)).body).toBe('{"ok":true,"duplicate":true}')
    expect(runs).toBe(1)
  })
})
