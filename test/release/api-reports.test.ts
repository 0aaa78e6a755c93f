/**
 * The committed API reports (packages/<dir>/api/*.api.md) are the public surface of the built
 * packages: a change to an export, a signature, an option or an error code union that is not in
 * the reports fails here, and the message names `npm run api:update`. The second case proves the
 * check sees a change: a copy of the Lambda package gets one more export in its declarations.
 */
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'
import { checkReports, describeDifferences, entryPoints, publishedPackages } from '../../scripts/api-report.mjs'

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..')

describe('API reports', () => {
  // Inside the Lambda package's node_modules: its imports (@email-webhooks/core, @types/aws-lambda) resolve from there.
  const scratchBase = join(ROOT, 'packages/lambda/node_modules/.cache')
  mkdirSync(scratchBase, { recursive: true })
  const scratch = mkdtempSync(join(scratchBase, 'api-report-test-'))
  afterAll(() => rmSync(scratch, { recursive: true, force: true }))

  it('has one report per entry point of every published package, core with each subpath', () => {
    const names = publishedPackages().flatMap((pkg) => entryPoints(pkg.dir, pkg.manifest, pkg.name).map((e) => e.report))
    expect(names).toEqual(
      expect.arrayContaining([
        'core',
        'core.sqlite',
        'core.postgres',
        'core.redis',
        'core.dynamodb',
        'core.deno-kv',
        'core.api',
        'core.testing',
        'core.console',
        'express',
        'hono',
        'fastify',
        'koa',
        'lambda',
        'cloudflare',
        'bullmq',
        'pg-boss',
        'cli',
      ]),
    )
    expect(names).toHaveLength(18)
  })

  it('match the built packages (after a change to the public surface: npm run api:update)', () => {
    const differences = checkReports()
    expect(differences, describeDifferences(differences)).toEqual([])
  }, 120_000)

  it('fail on an export added without its report, naming the command that updates them', () => {
    const copy = join(scratch, 'packages/lambda')
    mkdirSync(copy, { recursive: true })
    for (const part of ['dist', 'api', 'package.json']) cpSync(join(ROOT, 'packages/lambda', part), join(copy, part), { recursive: true })
    const dts = join(copy, 'dist/index.d.ts')
    writeFileSync(dts, `${readFileSync(dts, 'utf8')}\n/** One more export. */\nexport declare const surprise: number;\n`)
    const differences = checkReports({ root: scratch, packages: publishedPackages(scratch) })
    expect(differences).toHaveLength(1)
    expect(differences[0]).toMatchObject({ kind: 'changed', file: 'packages/lambda/api/lambda.api.md' })
    expect(differences[0]?.diff).toContain('+ export const surprise: number;')
    expect(describeDifferences(differences)).toContain('run `npm run api:update`')
  }, 60_000)
})
