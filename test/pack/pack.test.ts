/**
 * The packed packages install and run outside the workspace: `npm run pack` (pnpm pack of core and
 * every adapter; or, under `npm run release`, the release's own tarballs from EMAIL_WEBHOOKS_PACKS), `npm install` of the tarballs into a fresh temporary app (with express, hono,
 * @hono/node-server, fastify, koa and @koa/router from the registry, through the npm cache), then a
 * signed delivery through each adapter over real HTTP on 127.0.0.1 (the Lambda handler invoked with a
 * function-URL event): 200, the duplicate 200, the tampered body 401. The queue packages (BullMQ,
 * pg-boss, with their peers from the registry) load from their tarballs, ESM and CJS.
 *
 * better-sqlite3 is installed with --ignore-scripts (compiling it takes minutes) at the version the
 * workspace built, and the workspace's compiled binding is copied in; the Express app uses the
 * default store, and a second process proves the event was recorded in its SQLite file.
 */
import { execFile } from 'node:child_process'
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

const run = promisify(execFile)
const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..')
const PACKAGES = ['core', 'express', 'hono', 'fastify', 'koa', 'lambda', 'cloudflare', 'bullmq', 'pg-boss'] as const
const INSTALL_TIMEOUT_MS = 240_000
/**
 * `npm run pack` builds and packs all 10 packages: about 41 s alone, but past 240 s in a full
 * `test:all` on a loaded 2-core machine (2026-11-28); a margin, not what the test checks.
 */
const PACK_TIMEOUT_MS = 600_000
const STEP_TIMEOUT_MS = 60_000

/** The version and folder of a package as the workspace installed it (so npm finds it in its cache). */
function workspacePackage(name: string, from: string): { version: string; dir: string } {
  const manifest = realpathSync(join(ROOT, from, 'node_modules', name, 'package.json'))
  return { version: JSON.parse(readFileSync(manifest, 'utf8')).version, dir: dirname(manifest) }
}

type Answer = { status: number; json: unknown }
type AppRun = { first: Answer; again: Answer; tampered: Answer; handled: string[] }

describe('packed packages in a fresh app outside the workspace', () => {
  const dir = mkdtempSync(join(tmpdir(), 'email-webhooks-pack-'))
  const app = join(dir, 'app')
  const tarballs: Record<string, string> = {}
  let cliTarball = ''
  const started = performance.now()

  async function runApp(adapter: string, deliveryFile: string, db: string): Promise<AppRun> {
    const { stdout } = await run(process.execPath, ['app.mjs', adapter, join(dir, deliveryFile)], {
      cwd: app,
      timeout: STEP_TIMEOUT_MS,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', EMAIL_WEBHOOKS_DB: join(dir, db) },
    })
    return JSON.parse(stdout.trim().split('\n').at(-1) ?? '') as AppRun
  }

  beforeAll(
    async () => {
      // `npm run release` packs the versioned packages itself and passes their folder here: those tarballs, as they are.
      const given = process.env.EMAIL_WEBHOOKS_PACKS
      // The documented command otherwise: `npm run pack -- --out <dir>` writes every package's tarball there.
      const { stdout } = given
        ? { stdout: '' }
        : await run('npm', ['run', 'pack', '--', '--out', dir], { cwd: ROOT, timeout: PACK_TIMEOUT_MS })
      const from = given ?? dir
      for (const name of PACKAGES) {
        const tarball = readdirSync(from).find((file) => new RegExp(`^email-webhooks-${name}-[0-9.]+\\.tgz$`).test(file))
        expect(tarball, `npm run pack wrote the ${name} tarball`).toBeDefined()
        tarballs[name] = join(from, tarball as string)
        if (!given) expect(stdout).toContain(tarballs[name])
      }
      const cli = readdirSync(from).find((file) => /^email-webhooks-[0-9.]+\.tgz$/.test(file))
      expect(cli, 'npm run pack wrote the CLI tarball').toBeDefined()
      cliTarball = join(from, cli as string)
      if (!given) {
        // Its install line names core's tarball with the adapter's.
        expect(stdout).toContain(`npm install ${tarballs.core} ${tarballs.express}`)
        // The CLI's tarball (unscoped) is named as the CLI, with its own dev-dependency line and npx --no-install.
        expect(stdout).toMatch(new RegExp(`email-webhooks \\(the CLI, a dev dependency\\) +${cliTarball.replaceAll('.', '\\.')}\n`))
        expect(stdout).toContain(`npm i -D ${cliTarball}\n  npx --no-install email-webhooks `)
        // What npx's bare 404 means when the CLI is not installed, and that the absolute line works anywhere.
        expect(cliTarball.startsWith('/')).toBe(true)
        expect(stdout).toContain(
          'If npx --no-install email-webhooks … answers "npm error 404 Not Found - GET https://registry.npmjs.org/email-webhooks", the CLI is not installed in that folder',
        )
      }
      const sqlite = workspacePackage('better-sqlite3', 'packages/express')
      mkdirSync(app)
      const file = (name: string): string => `file:${tarballs[name]}`
      writeFileSync(
        join(app, 'package.json'),
        JSON.stringify({
          name: 'pack-test-app',
          private: true,
          type: 'module',
          dependencies: {
            '@email-webhooks/core': file('core'),
            '@email-webhooks/express': file('express'),
            '@email-webhooks/hono': file('hono'),
            '@email-webhooks/fastify': file('fastify'),
            '@email-webhooks/koa': file('koa'),
            '@email-webhooks/lambda': file('lambda'),
            '@email-webhooks/cloudflare': file('cloudflare'),
            '@email-webhooks/bullmq': file('bullmq'),
            '@email-webhooks/pg-boss': file('pg-boss'),
            bullmq: workspacePackage('bullmq', 'test').version,
            'pg-boss': workspacePackage('pg-boss', 'test').version,
            express: workspacePackage('express', 'test').version,
            fastify: workspacePackage('fastify', 'test').version,
            koa: workspacePackage('koa', 'test').version,
            '@koa/router': workspacePackage('@koa/router', 'test').version,
            hono: workspacePackage('hono', 'test').version,
            '@hono/node-server': workspacePackage('@hono/node-server', 'test').version,
          },
          // No override for core: installed with the adapters' tarballs, it satisfies their `^0.1.0` (as the
          // pack command tells users); better-sqlite3 is pinned to the version whose binding is copied in.
          overrides: { 'better-sqlite3': sqlite.version },
        }),
      )
      copyFileSync(join(ROOT, 'test/pack/app.mjs'), join(app, 'app.mjs'))
      await run('npm', ['install', '--ignore-scripts', '--prefer-offline', '--no-audit', '--no-fund'], {
        cwd: app,
        timeout: INSTALL_TIMEOUT_MS,
      })
      // The CLI as the pack command says: a second command, after core's tarball is installed.
      await run('npm', ['install', '-D', cliTarball, '--ignore-scripts', '--prefer-offline', '--no-audit', '--no-fund'], {
        cwd: app,
        timeout: INSTALL_TIMEOUT_MS,
      })
      const release = join(app, 'node_modules/better-sqlite3/build/Release')
      mkdirSync(release, { recursive: true })
      copyFileSync(join(sqlite.dir, 'build/Release/better_sqlite3.node'), join(release, 'better_sqlite3.node'))
    },
    PACK_TIMEOUT_MS + 2 * INSTALL_TIMEOUT_MS + (PACKAGES.length + 1) * STEP_TIMEOUT_MS,
  )

  afterAll(() => {
    console.log(`pack test: pack + install + runs took ${((performance.now() - started) / 1000).toFixed(1)} s`)
    rmSync(dir, { recursive: true, force: true })
  })

  it('packs package.json files without workspace: ranges, each with its license', async () => {
    for (const name of PACKAGES) {
      const { stdout } = await run('tar', ['-xzOf', tarballs[name] ?? '', 'package/package.json'])
      expect(stdout).not.toContain('workspace:')
      expect(JSON.parse(stdout).license).toBe('MIT')
      const { stdout: list } = await run('tar', ['-tzf', tarballs[name] ?? ''])
      expect(list.split('\n')).toEqual(expect.arrayContaining(['package/LICENSE', 'package/README.md']))
    }
  })

  it('installs one copy of core, the tarball, under the adapters', () => {
    for (const name of PACKAGES.filter((p) => p !== 'core')) {
      expect([name, existsSync(join(app, `node_modules/@email-webhooks/${name}/node_modules`))]).toEqual([name, false])
    }
    expect(readdirSync(join(app, 'node_modules/@email-webhooks')).sort()).toEqual([...PACKAGES].sort())
  })

  for (const adapter of ['express', 'hono', 'fastify', 'koa', 'lambda', 'fetch']) {
    it(`answers 200, duplicate 200 and tampered 401 through ${adapter}${adapter === 'lambda' ? '' : ' over HTTP'}`, async () => {
      const result = await runApp(adapter, `${adapter}-delivery.json`, `${adapter}.db`)
      expect(result.first).toEqual({ status: 200, json: { ok: true } })
      expect(result.again).toEqual({ status: 200, json: { ok: true, duplicate: true } })
      expect(result.tampered).toMatchObject({ status: 401, json: { error: { code: 'signature_mismatch' } } })
      expect(result.handled).toHaveLength(1)
    })
  }

  it('loads the queue packages from their tarballs, ESM and CJS, with their peers', async () => {
    const script = [
      "const esm = await import('@email-webhooks/bullmq')",
      "const pg = await import('@email-webhooks/pg-boss')",
      "const { createRequire } = await import('node:module')",
      'const require = createRequire(import.meta.url)',
      "const cjs = require('@email-webhooks/bullmq')",
      "console.log(JSON.stringify([esm.bullmqJobId('default:a'), typeof cjs.bullmqSink, pg.pgBossJobId('default:a'), typeof require('@email-webhooks/pg-boss').pgBossSink]))",
    ].join(';')
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], { cwd: app, timeout: STEP_TIMEOUT_MS })
    const [jobId, sink, uuid, pgSink] = JSON.parse(stdout.trim())
    expect([jobId, sink, pgSink]).toEqual(['ewh-default%3Aa', 'function', 'function'])
    expect(uuid).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
  })

  it("loads the Cloudflare stores and core's DynamoDB and Deno KV subpaths from their tarballs, ESM and CJS", async () => {
    const script = [
      "const cf = await import('@email-webhooks/cloudflare')",
      "const ddb = await import('@email-webhooks/core/dynamodb')",
      "const kv = await import('@email-webhooks/core/deno-kv')",
      "const { createRequire } = await import('node:module')",
      'const require = createRequire(import.meta.url)',
      "const cjs = require('@email-webhooks/cloudflare')",
      "console.log(JSON.stringify([typeof cf.DurableObjectDedupStore, typeof cf.EmailWebhookDedupObject, typeof cjs.D1DedupStore, ddb.dynamoDBTableInput().KeySchema[0].AttributeName, typeof require('@email-webhooks/core/dynamodb').DynamoDBDedupStore, typeof kv.DenoKvDedupStore]))",
    ].join(';')
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], { cwd: app, timeout: STEP_TIMEOUT_MS })
    expect(JSON.parse(stdout.trim())).toEqual(['function', 'function', 'function', 'pk', 'function', 'function'])
  })

  it('runs the CLI installed from its tarball with npx --no-install, on the one copy of core', async () => {
    expect(existsSync(join(app, 'node_modules/email-webhooks/node_modules'))).toBe(false)
    const event = join(dir, 'cli-event.json')
    writeFileSync(event, JSON.stringify({ id: 'evt-1', type: 'email.bounced', created_at: '2026-11-20T00:00:00Z', data: { id: 'e-1' } }))
    const { stdout } = await run('npx', ['--no-install', 'email-webhooks', 'sign', event, '--json'], {
      cwd: app,
      timeout: STEP_TIMEOUT_MS,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', EMAIL_WEBHOOK_SECRET: 'whsec_pack_test_secret_0123' },
    })
    expect(JSON.parse(stdout).headers).toMatchObject({
      'webhook-id': 'evt-1',
      'webhook-signature': expect.stringMatching(/^[0-9a-f]{64}$/),
    })
  })

  it("keeps the Express package's default SQLite store across processes", async () => {
    const first = await runApp('express', 'durable-delivery.json', 'durable.db')
    expect(first.first).toEqual({ status: 200, json: { ok: true } })
    expect(existsSync(join(dir, 'durable.db'))).toBe(true)
    // A new process, the same file, the same delivery: recorded, so the handler does not run again.
    const second = await runApp('express', 'durable-delivery.json', 'durable.db')
    expect(second.first).toEqual({ status: 200, json: { ok: true, duplicate: true } })
    expect(second.handled).toEqual([])
  })
})
