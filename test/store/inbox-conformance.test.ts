// The inbox conformance suite on every built-in store's inbox.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { MemoryDedupStore } from '@email-webhooks/core'
import { SqliteDedupStore } from '@email-webhooks/core/sqlite'
import { inboxConformance } from '@email-webhooks/core/testing'
import { afterAll, describe, it } from 'vitest'

const dir = mkdtempSync(join(tmpdir(), 'email-webhooks-inbox-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

inboxConformance('MemoryDedupStore', { describe, it }, { createStore: () => new MemoryDedupStore() })
inboxConformance(
  'SqliteDedupStore (a temp file)',
  { describe, it },
  { createStore: () => new SqliteDedupStore({ path: join(dir, 'inbox.db') }) },
)
