import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { type Claim, type ClaimOptions, type CompleteOptions, type DedupStore, MemoryDedupStore } from '@email-webhooks/core'
import { SqliteDedupStore } from '@email-webhooks/core/sqlite'
import { dedupStoreConformance } from '@email-webhooks/core/testing'
import { afterAll, describe, expect, it } from 'vitest'

const here = dirname(fileURLToPath(import.meta.url))
const dir = mkdtempSync(join(tmpdir(), 'email-webhooks-conformance-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

dedupStoreConformance('MemoryDedupStore', { describe, it }, { createStore: () => new MemoryDedupStore() })

// A new store (and connection) per test on one file per durability: the suite also checks
// that a reopened file keeps working.
dedupStoreConformance(
  "SqliteDedupStore (durability 'full', temp file)",
  { describe, it },
  { createStore: () => new SqliteDedupStore({ path: join(dir, 'full.db'), durability: 'full' }) },
)
dedupStoreConformance(
  "SqliteDedupStore (durability 'normal', temp file)",
  { describe, it },
  { createStore: () => new SqliteDedupStore({ path: join(dir, 'normal.db'), durability: 'normal' }) },
)

/** Two connections to one file, used in turn: a claim made through one is seen and fenced by the other. */
class AlternatingStore implements DedupStore {
  #turn = 0
  constructor(readonly stores: readonly [DedupStore, DedupStore]) {}
  #next(): DedupStore {
    return this.stores[this.#turn++ % 2] as DedupStore
  }
  claim(key: string, opts: ClaimOptions) {
    return this.#next().claim(key, opts)
  }
  complete(claim: Claim, opts: CompleteOptions) {
    return this.#next().complete(claim, opts)
  }
  release(claim: Claim) {
    return this.#next().release(claim)
  }
  async close() {
    await Promise.all(this.stores.map((store) => store.close?.()))
  }
}

dedupStoreConformance(
  'SqliteDedupStore (two connections on one file, calls alternate)',
  { describe, it },
  {
    createStore: () =>
      new AlternatingStore([
        new SqliteDedupStore({ path: join(dir, 'shared.db') }),
        new SqliteDedupStore({ path: join(dir, 'shared.db') }),
      ]),
  },
)

describe('dedupStoreConformance under node:test', () => {
  it('runs every conformance test green with node:test describe/it', async () => {
    // Count the tests the suite registers, so the child's report is checked against the real number.
    let expected = 0
    dedupStoreConformance(
      'count',
      { describe: (_name, fn) => fn(), it: () => void expected++ },
      { createStore: () => new MemoryDedupStore() },
    )
    expect(expected).toBeGreaterThanOrEqual(10)

    const file = join(here, 'conformance-node-test.mjs')
    const { stdout } = await promisify(execFile)(process.execPath, ['--test', '--test-reporter=tap', file], {
      cwd: here,
      timeout: 30_000,
    })
    // execFile rejects on a non-zero exit code, so reaching here means exit code 0.
    expect(stdout).toMatch(/DedupStore conformance: MemoryDedupStore under node:test/)
    expect(stdout).toContain(`# tests ${expected}\n`)
    expect(stdout).toContain(`# pass ${expected}\n`)
    expect(stdout).toContain('# fail 0\n')
    expect(stdout).not.toMatch(/^not ok/m)
  })

  it('makes node --test exit non-zero when a store breaks the contract', async () => {
    // The other side of the check above: a store that never dedups must fail under node:test.
    const file = join(here, 'conformance-node-test.mjs')
    const result = await promisify(execFile)(process.execPath, ['--test', '--test-reporter=tap', file], {
      cwd: here,
      timeout: 30_000,
      env: { ...process.env, CONFORMANCE_BROKEN_STORE: '1' },
    }).then(
      () => ({ code: 0, stdout: '' }),
      (error: { code?: number; stdout?: string }) => ({ code: error.code, stdout: error.stdout ?? '' }),
    )
    expect(result.code).not.toBe(0)
    expect(result.stdout).toMatch(/^not ok/m)
  })
})
