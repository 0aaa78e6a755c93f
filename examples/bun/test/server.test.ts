/**
 * examples/bun under real Bun (from npm): the Bun.serve server of the recipe (docs/getting-started/bun.md) answers
 * signed deliveries over HTTP on 127.0.0.1, keeps its dedup in bun:sqlite across a restart,
 * and its store passes the conformance suite under `bun test`.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { TEST_SECRET } from '@email-webhooks/core/testing'
import { afterAll, describe, expect, it } from 'vitest'
import { expectDedupAcrossRestart, expectExampleAnswers } from '../../../test/runtimes/example-deliveries.js'
import { BUN_ARGS, conformanceTestCount, runToEnd, runtimeBin, startServer } from '../../../test/runtimes/runtimes.js'

const BUN = await runtimeBin('bun')

const exampleDir = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const scratch = mkdtempSync(join(tmpdir(), 'example-bun-'))
const env = {
  ...process.env,
  PORT: '0',
  EMAIL_WEBHOOK_SECRET: TEST_SECRET,
  EMAIL_WEBHOOKS_DB: join(scratch, 'dedup.sqlite'),
  NO_COLOR: '1',
}
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

const start = () => startServer(BUN, [...BUN_ARGS, 'src/server.ts'], { cwd: exampleDir, env, timeoutMs: 30_000 })

describe('examples/bun', () => {
  it('answers valid, duplicate, tampered, stale and unknown-type deliveries over HTTP, and runs the handler once', async () => {
    const server = await start()
    try {
      await expectExampleAnswers(server)
    } finally {
      await server.stop()
    }
  })

  it('still knows a handled event after a restart (bun:sqlite file)', async () => {
    await expectDedupAcrossRestart(() => start())
  })

  it('passes the dedup-store conformance suite with BunSqliteDedupStore under bun test', async () => {
    const run = await runToEnd(BUN, [...BUN_ARGS, 'test', './test/bun-sqlite-store.conformance.ts'], {
      cwd: exampleDir,
      env,
      timeoutMs: 60_000,
    })
    const output = run.stdout + run.stderr
    expect(run.code, output).toBe(0)
    expect(output).toMatch(new RegExp(`\\b${await conformanceTestCount()} pass\\b`))
    expect(output).toMatch(/\b0 fail\b/)
  })
})
