/**
 * examples/deno under real Deno (from npm): the Deno.serve server of the recipe (docs/getting-started/deno.md) answers
 * signed deliveries over HTTP on 127.0.0.1, keeps its dedup in Deno KV across a restart, and
 * its store (DenoKvDedupStore from @email-webhooks/core/deno-kv) passes the conformance suites
 * under `deno test`.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { TEST_SECRET } from '@email-webhooks/core/testing'
import { afterAll, describe, expect, it } from 'vitest'
import { expectDedupAcrossRestart, expectExampleAnswers } from '../../../test/runtimes/example-deliveries.js'
import { betterSqlite3Dir, conformanceTestCount, ROOT, runToEnd, runtimeBin, startServer } from '../../../test/runtimes/runtimes.js'

const DENO = await runtimeBin('deno')

const exampleDir = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const scratch = mkdtempSync(join(tmpdir(), 'example-deno-'))
const env = { ...process.env, PORT: '0', EMAIL_WEBHOOK_SECRET: TEST_SECRET, EMAIL_WEBHOOKS_KV: join(scratch, 'dedup.kv'), NO_COLOR: '1' }
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

/** Network on 127.0.0.1, reading the repository and writing only the scratch folder; better-sqlite3 may not even be read. */
const permissions = [
  '--unstable-kv',
  '--allow-net=127.0.0.1',
  '--allow-env',
  `--allow-read=${ROOT},${scratch}`,
  `--allow-write=${scratch}`,
  `--deny-read=${betterSqlite3Dir()}`,
]

const start = () => startServer(DENO, ['run', ...permissions, 'src/server.ts'], { cwd: exampleDir, env, timeoutMs: 30_000 })

describe('examples/deno', () => {
  it('answers valid, duplicate, tampered, stale and unknown-type deliveries over HTTP, and runs the handler once', async () => {
    const server = await start()
    try {
      await expectExampleAnswers(server)
    } finally {
      await server.stop()
    }
  })

  it('still knows a handled event after a restart (Deno KV file)', async () => {
    await expectDedupAcrossRestart(() => start())
  })

  it('passes the dedup-store conformance suite (and the ordering suite, without the capability) with DenoKvDedupStore under deno test', async () => {
    const run = await runToEnd(
      DENO,
      ['test', '--unstable-kv', '--allow-read', '--allow-write', '--allow-env', '--no-check', 'test/deno-kv-store.conformance.ts'],
      { cwd: exampleDir, env, timeoutMs: 60_000 },
    )
    const output = run.stdout + run.stderr
    expect(run.code, output).toBe(0)
    // The dedup suite with its duration case, and the ordering suite's one case for a store without ordering.
    expect(output).toContain(`1 passed (${(await conformanceTestCount()) + 2} steps) | 0 failed`)
  })
})
