// Runs every benchmark with tiny durations so the suite cannot rot. No speed is asserted: only
// that each benchmark ran and produced its rows, that every HTTP answer was a 2xx (ours, the
// hand-written baselines and the bare frameworks), that the servers saw exactly the requests the
// load generators sent (each distinct event's handler once), that with many instances on a shared
// PostgreSQL or Redis our receivers ran every acknowledged event exactly once, and that the inbox
// worker drained its queue.
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
  'express-postgres',
  'express-redis',
  'hono-memory',
  'hono-sqlite',
  'hono-sqlite-dup',
  'hono-sqlite-c50',
  'hono-sqlite-c100',
  'hono-postgres',
  'hono-redis',
  'hono-memory-ordering',
  'hono-sqlite-ordering',
  'express-sqlite-ordering',
  'hono-memory-otel',
  'hono-memory-twin',
  'hono-memory-otel-sdk',
  'hono-sqlite-inbox',
  'hono-postgres-inbox',
  'hono-sqlite-inbox-web',
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
  dbCpuPerRequestUs?: number
  connections: number
}
type Side = 'info' | 'main' | 'variant'
interface Summary {
  id: string
  kind: string
  mode: string
  connections: number
  main: { mode: string }
  info?: { mode: string }
  pairs: Partial<Record<Side, Round>>[]
  crossPairs?: Partial<Record<Side, Round>>
  framework: string
  storeProblem?: string
}
interface MultiSide {
  acked: number
  runsOnce: number
  runsTwice: number
  runsNever: number
  errors: number
}
interface Multi {
  store: string
  hand: MultiSide
  ours: MultiSide
  rounds: { hand: { statuses: Record<string, number> }[]; ours: { statuses: Record<string, number> }[] }
}

/** How many handler runs a round of `mode` must show for what its server received. */
function expectHandled(mode: string, kind: string, round: Round, what: string) {
  if (mode === 'sqlite-inbox-web') expect(round.handled, `${what}: no worker, no handler runs`).toBe(0)
  // The in-process worker runs handlers after the answers, into the next round.
  else if (mode === 'sqlite-inbox' || mode === 'postgres-inbox') expect(round.handled, what).toBeGreaterThanOrEqual(0)
  // In the duplicates pool the second copies do not run (bare and lean servers count every request).
  else if (kind === 'duplicates' && !['bare', 'lean'].includes(mode)) expect(round.handled, what).toBeLessThan(round.served)
  else expect(round.handled, what).toBe(round.served)
}

describe('bench smoke run', () => {
  it('runs verification, store and HTTP benchmarks end to end with only 2xx answers', () => {
    const out = join(dir, 'RESULTS.md')
    const json = join(dir, 'results.json')
    const run = spawnSync(process.execPath, [join(import.meta.dirname, '..', 'src', 'run.js'), '--smoke', '--out', out, '--json', json], {
      encoding: 'utf8',
      timeout: 240_000,
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
      const rounds = [...summary.pairs, ...(summary.crossPairs ? [summary.crossPairs] : [])].flatMap((pair) =>
        (Object.entries(pair) as [Side, Round][]).map(([side, round]) => [side, round] as const),
      )
      // The smoke run cross-checks with autocannon only the first variant of each framework.
      if (http.find((s) => s.framework === summary.framework) === summary)
        expect(rounds.map(([, round]) => round.tool)).toContain('autocannon')
      for (const [side, round] of rounds) {
        const mode = side === 'variant' ? summary.mode : (summary[side]?.mode ?? '')
        const what = `${summary.id} ${side} ${mode} (${round.tool})`
        expect(round.requests, what).toBeGreaterThan(0)
        expect(round.connections, what).toBe(summary.connections)
        expect(round.non2xx, `${what}: non-2xx answers ${JSON.stringify(round.statuses)}`).toBe(0)
        expect(round.errors, `${what}: socket errors`).toBe(0)
        expect(
          Object.keys(round.statuses).every((status) => status.startsWith('2')),
          what,
        ).toBe(true)
        expect(round.served, `${what}: requests the server saw`).toBe(round.requests)
        expect(round.cpuPerRequestUs, what).toBeGreaterThan(0)
        if (/postgres|redis/.test(mode)) expect(round.dbCpuPerRequestUs, `${what}: database server CPU`).toBeGreaterThanOrEqual(0)
        expectHandled(mode, side === 'info' ? 'distinct' : summary.kind, round, what)
      }
    }

    // Many instances: every acknowledged event ran exactly once with our stores; the hand-written
    // baselines are counted, not judged (copies at once can run twice there: that is the finding).
    const multi: Multi[] = results.multi
    expect(multi.map((m) => m.store)).toEqual(['postgres', 'redis'])
    for (const m of multi) {
      for (const side of ['hand', 'ours'] as const) expect(m[side].acked, `${m.store} ${side}`).toBeGreaterThan(0)
      expect(m.ours.runsTwice, `${m.store}: events our receivers ran more than once`).toBe(0)
      expect(m.ours.runsNever, `${m.store}: events acknowledged and never run`).toBe(0)
      expect(m.ours.runsOnce, m.store).toBe(m.ours.acked)
      expect(m.hand.runsNever, m.store).toBe(0)
      expect(m.hand.errors + m.ours.errors, `${m.store}: socket errors`).toBe(0)
      // 409: a copy refused while the other runs; 503: the store slower than storeTimeoutMs (a loaded machine).
      for (const round of [...m.rounds.hand, ...m.rounds.ours])
        expect(
          Object.keys(round.statuses).every((status) => ['200', '409', '503'].includes(status)),
          JSON.stringify(round.statuses),
        ).toBe(true)
    }
    expect(results.worker.map((row: { store: string }) => row.store)).toEqual([...Array(3).fill('SQLite'), ...Array(3).fill('PostgreSQL')])
    for (const row of results.worker) expect(row.worker.perSecond, row.mode).toBeGreaterThan(0)

    const markdown = readFileSync(out, 'utf8')
    for (const heading of [
      '## Method',
      '## Targets (DESIGN.md performance budget, issue 34)',
      '## HTTP',
      '## Durable SQLite by connections (Hono)',
      '## Inbox mode (issue 35, SQLite)',
      '## Many instances (shared PostgreSQL, shared Redis)',
      '## Every HTTP round',
      '## Verification',
      '## Dedup stores',
    ])
      expect(markdown).toContain(heading)
    // Every table row has as many cells as its header.
    let columns = 0
    for (const line of markdown.split('\n')) {
      if (!line.startsWith('|')) columns = 0
      else if (columns === 0) columns = line.split(' | ').length
      else expect(line.split(' | ').length, line).toBe(columns)
    }
    for (const target of [
      'Hono (node-server) + memory store: req/s ≥ 0.9× hand-written',
      'Hono (node-server) + default SQLite store: CPU per event ≤ 1.25× hand-written',
      'Express 5 + PostgresDedupStore: CPU per event ≤ 1.25× hand-written (receiver + database server)',
      'Hono (node-server) + RedisDedupStore (AOF, appendfsync always): req/s ≥ 0.9× hand-written',
      'at 64 KB',
    ]) {
      expect(markdown.split('\n').filter((line) => line.includes(target)).length, target).toBeGreaterThanOrEqual(1)
    }
  }, 240_000)
})
