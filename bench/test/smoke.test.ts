// Runs every benchmark with tiny durations so the suite cannot rot. No speed is asserted: only
// that each benchmark ran and produced its rows, that every HTTP answer was a 2xx, and that the
// servers saw exactly the requests the load generators sent (each distinct event's handler once).
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'

const dir = mkdtempSync(join(tmpdir(), 'email-webhooks-bench-smoke-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const VARIANTS = [
  'express-memory',
  'express-memory-lean',
  'express-sqlite',
  'express-sqlite-dup',
  'hono-memory',
  'hono-sqlite',
  'hono-sqlite-dup',
  'hono-memory-ordering',
  'hono-sqlite-ordering',
  'express-sqlite-ordering',
]

interface Round {
  tool: string
  requests: number
  served: number
  handled: number
  non2xx: number
  errors: number
  statuses: Record<string, number>
  cpuPerRequestUs: number
}
interface Summary {
  id: string
  kind: string
  pairs: { bare: Round; variant: Round }[]
  crossPairs: { bare: Round; variant: Round }
  storeProblem?: string
}

describe('bench smoke run', () => {
  it('runs verification, store and HTTP benchmarks end to end with only 2xx answers', () => {
    const out = join(dir, 'RESULTS.md')
    const json = join(dir, 'results.json')
    const run = spawnSync(process.execPath, [join(import.meta.dirname, '..', 'src', 'run.js'), '--smoke', '--out', out, '--json', json], {
      encoding: 'utf8',
      timeout: 120_000,
    })
    expect(run.status, run.stderr).toBe(0)
    const results = JSON.parse(readFileSync(json, 'utf8'))

    for (const size of ['300 B', '2 KB', '64 KB', '1 MB']) {
      for (const name of ['hand-written', 'verifyWebhook', 'standardwebhooks', 'svix', 'stripe', 'verifyWebhook + parseEnvelope']) {
        const row = results.verify.rows.find((r: { size: string; name: string }) => r.size === size && r.name === name)
        expect(row?.nsPerOp, `${name} at ${size}`).toBeGreaterThan(0)
      }
    }
    expect(results.verify.reject).toHaveLength(3)
    expect(results.stores).toHaveLength(9)
    for (const row of results.stores) expect(row.perSecond, row.store).toBeGreaterThan(0)

    const http: Summary[] = results.http
    expect(http.map((s) => s.id)).toEqual(VARIANTS)
    for (const summary of http) {
      expect(summary.storeProblem, summary.id).toBeUndefined()
      expect(summary.pairs.length, summary.id).toBeGreaterThanOrEqual(1)
      const rounds = [...summary.pairs, summary.crossPairs].flatMap((pair) => [
        ['bare', pair.bare],
        ['variant', pair.variant],
      ]) as [string, Round][]
      expect(rounds.map(([, round]) => round.tool)).toContain('autocannon')
      for (const [side, round] of rounds) {
        const what = `${summary.id} ${side} (${round.tool})`
        expect(round.requests, what).toBeGreaterThan(0)
        expect(round.non2xx, `${what}: non-2xx answers ${JSON.stringify(round.statuses)}`).toBe(0)
        expect(round.errors, `${what}: socket errors`).toBe(0)
        expect(
          Object.keys(round.statuses).every((status) => status.startsWith('2')),
          what,
        ).toBe(true)
        expect(round.served, `${what}: requests the server saw`).toBe(round.requests)
        expect(round.cpuPerRequestUs, what).toBeGreaterThan(0)
        // Each distinct event runs its handler once; in the duplicates pool the second copies do not.
        if (side === 'variant' && summary.kind === 'duplicates') expect(round.handled, what).toBeLessThan(round.served)
        else expect(round.handled, what).toBe(round.served)
      }
    }

    const markdown = readFileSync(out, 'utf8')
    for (const heading of ['## Method', '## Targets (issue 16)', '## HTTP', '## Verification', '## Dedup stores'])
      expect(markdown).toContain(heading)
    // Every table row has as many cells as its header.
    let columns = 0
    for (const line of markdown.split('\n')) {
      if (!line.startsWith('|')) columns = 0
      else if (columns === 0) columns = line.split(' | ').length
      else expect(line.split(' | ').length, line).toBe(columns)
    }
    for (const target of [
      'memory store ≥ 0.85× bare',
      'durable SQLite p99 ≤ 2× bare',
      'over the memory store',
      '50 % duplicates ≥ 0.9× bare',
      'at 64 KB',
    ]) {
      expect(markdown.split('\n').filter((line) => line.includes(target)).length, target).toBeGreaterThanOrEqual(1)
    }
  }, 120_000)
})
