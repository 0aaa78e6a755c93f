/**
 * Bun and Deno (installed from npm) each run neutral/run-neutral.ts: the runtime-neutral
 * behaviour subset over the fetch handler and the Hono adapter (memory and custom store), the
 * 16 HMAC vectors, the default store and the store conformance suite. Both runtimes start at
 * once; this file checks what they report against the Node path.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { cryptoBackendName, MemoryDedupStore } from '@email-webhooks/core'
import { dedupStoreConformance } from '@email-webhooks/core/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { caseNames } from './neutral/suite.ts'
import { expectedVectorResults } from './neutral/vectors-check.ts'
import { BUN_ARGS, denoArgs, RUNTIMES_DIR, type RunResult, runToEnd, runtimeBin } from './runtimes.js'

const BUN = await runtimeBin('bun')
const DENO = await runtimeBin('deno')

interface Reported {
  runtime: string
  version: string
  backend: string
  cases: { name: string; ok: boolean; error?: string; ms: number }[]
  vectors: { name: string; signature: string; valid: unknown; flipped: unknown }[]
  defaultStore: { answers: string[]; handled: number; warnings: string[] }
  conformance: { name: string; ok: boolean; error?: string }[]
  ms: number
}

const RUN_TIMEOUT_MS = 120_000
const scratch = mkdtempSync(join(tmpdir(), 'email-webhooks-runtimes-'))
const dbPath = join(scratch, 'dedup.db')

const RUNS: { runtime: 'Bun' | 'Deno'; command: string; args: string[] }[] = [
  { runtime: 'Bun', command: BUN, args: [...BUN_ARGS, 'neutral/run-neutral.ts'] },
  { runtime: 'Deno', command: DENO, args: [...denoArgs(), 'neutral/run-neutral.ts'] },
]

function parse(run: RunResult, runtime: string): Reported {
  const line = run.stdout.split('\n').find((l) => l.startsWith('RESULT '))
  if (run.code !== 0 || !line) throw new Error(`${runtime} exited ${run.code} without a result:\n${run.stdout}\n${run.stderr}`)
  return JSON.parse(line.slice('RESULT '.length)) as Reported
}

/** How many tests the conformance suite registers for one store. */
function conformanceCount(): number {
  let count = 0
  dedupStoreConformance('count', { describe: (_name, fn) => fn(), it: () => void count++ }, { createStore: () => new MemoryDedupStore() })
  return count
}

const reported = new Map<string, Reported>()

beforeAll(async () => {
  const env = { ...process.env, EMAIL_WEBHOOKS_DB: dbPath, NO_COLOR: '1' }
  const runs = await Promise.all(RUNS.map((r) => runToEnd(r.command, r.args, { cwd: RUNTIMES_DIR, env, timeoutMs: RUN_TIMEOUT_MS })))
  RUNS.forEach((r, i) => {
    reported.set(r.runtime, parse(runs[i]!, r.runtime))
  })
}, RUN_TIMEOUT_MS + 10_000)

afterAll(() => rmSync(scratch, { recursive: true, force: true }))

for (const { runtime } of RUNS) {
  describe(runtime, () => {
    const result = () => reported.get(runtime)!

    it('runs the built web entry on the Web Crypto backend', () => {
      expect(result().runtime).toBe(runtime)
      expect(result().version).toMatch(/^\d+\.\d+\.\d+/)
      expect(result().backend).toBe('web')
    })

    it('passes every case of the behaviour subset: fetch handler and Hono, memory and custom store, every status', () => {
      expect(result().cases.map((c) => c.name)).toEqual(caseNames(runtime))
      expect(result().cases.filter((c) => !c.ok)).toEqual([])
    })

    it('signs and verifies every one of the 16 vectors exactly as the Node path does', async () => {
      expect(cryptoBackendName()).toBe('node')
      const expected = await expectedVectorResults()
      expect(expected).toHaveLength(16)
      expect(result().vectors).toEqual(expected)
    })

    it('falls back to the memory store with one warning when no store is given, and never touches SQLite', () => {
      const { answers, handled, warnings } = result().defaultStore
      expect(answers).toEqual(['{"ok":true}', '{"ok":true,"duplicate":true}', '{"ok":true,"duplicate":true}'])
      expect(handled).toBe(1)
      expect(warnings).toHaveLength(1)
      expect(warnings[0]).toContain('SQLite is not available on this runtime')
      expect(warnings[0]).toContain('NOT durable')
      // EMAIL_WEBHOOKS_DB pointed here: a SQLite store would have created the file.
      expect(existsSync(dbPath)).toBe(false)
    })

    it('passes the dedup-store conformance suite with the memory store and the custom store', () => {
      expect(result().conformance).toHaveLength(2 * conformanceCount())
      expect(result().conformance.filter((c) => !c.ok)).toEqual([])
    })
  })
}
