import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'

// Runs every benchmark with tiny durations so the suite cannot rot. No speed is asserted:
// only that each benchmark ran, produced its figures, and that every HTTP answer was a 2xx.

const dir = mkdtempSync(join(tmpdir(), 'email-webhooks-bench-smoke-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe('bench smoke run', () => {
  it('runs verification, store and HTTP benchmarks end to end and writes the results file', () => {
    const out = join(dir, 'RESULTS.md')
    const run = spawnSync(process.execPath, [join(import.meta.dirname, '..', 'src', 'run.js'), '--smoke', '--out', out], {
      encoding: 'utf8',
      timeout: 120_000,
    })
    expect(run.status, run.stderr).toBe(0)
    const markdown = readFileSync(out, 'utf8')
    for (const heading of ['## Targets', '## Verification', '## Dedup stores', '## HTTP']) expect(markdown).toContain(heading)
    for (const name of ['hand-written', 'verifyWebhook', 'standardwebhooks', 'svix', 'stripe'])
      expect(markdown).toContain(`| 1 MB | ${name} |`)
    const httpRows = markdown
      .slice(markdown.indexOf('## HTTP'))
      .split('\n')
      .filter((line) => /^\| (Express|Hono)/.test(line))
    expect(httpRows).toHaveLength(8)
    for (const row of httpRows) {
      const cells = row.split('|').map((cell) => cell.trim())
      const [, label, perSecond, , , , non2xx, errors, handled] = cells
      expect(Number(perSecond?.replace(/,/g, '')), label).toBeGreaterThan(0)
      expect(non2xx, `${label}: non-2xx answers`).toBe('0')
      expect(errors, `${label}: connection errors`).toBe('0')
      expect(Number(handled?.replace(/,/g, '')), `${label}: handler runs`).toBeGreaterThan(0)
    }
  }, 180_000)
})
