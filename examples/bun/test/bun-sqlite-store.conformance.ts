// Run by `bun test` (see server.test.ts): the conformance suite of @email-webhooks/core/testing
// against BunSqliteDedupStore, on bun:test's describe and it.
import { afterAll, describe, it } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { dedupStoreConformance } from '@email-webhooks/core/testing'
import { BunSqliteDedupStore } from '../src/bun-sqlite-store.ts'

const dir = mkdtempSync(join(tmpdir(), 'bun-sqlite-store-'))
const store = new BunSqliteDedupStore(join(dir, 'dedup.sqlite'))
afterAll(async () => {
  await store.close()
  rmSync(dir, { recursive: true, force: true })
})

dedupStoreConformance('BunSqliteDedupStore (examples/bun)', { describe, it }, { createStore: () => store, closeAfterEach: false })
