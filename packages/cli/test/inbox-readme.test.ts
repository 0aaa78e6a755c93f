/**
 * The `inbox` section of the command line guide (docs/guides/cli.md, formerly this package's README)
 * runs as written: its commands, in order, in an app folder whose default SQLite file holds entries a
 * real inbox-mode receiver queued, with the guide's handlers
 * module (and a db.js beside it); its sample output has the real shape.
 */
import { readFileSync } from 'node:fs'
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { SqliteDedupStore } from '@email-webhooks/core/sqlite'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { runCli } from './helpers/cli.js'
import { lines, queueEvents } from './helpers/inbox.js'

const GUIDE = readFileSync(resolve(import.meta.dirname, '../../../docs/guides/cli.md'), 'utf8')
const SECTION = GUIDE.slice(GUIDE.indexOf('### `inbox list'), GUIDE.indexOf('## Exit codes'))
let app: string

beforeAll(async () => {
  app = await mkdtemp(join(tmpdir(), 'cli-inbox-readme-'))
})
afterAll(() => rm(app, { recursive: true, force: true }))

/** The fenced blocks of the section, with their language. */
function blocks(): Array<{ lang: string; code: string }> {
  return [...SECTION.matchAll(/^```(\w*)\n([\s\S]*?)^```$/gm)].map((m) => ({ lang: m[1] ?? '', code: m[2] ?? '' }))
}

it('runs the commands of the inbox section as written, with its handlers module', async () => {
  const [commands, sample, module, service, summary] = blocks()
  expect([commands?.lang, sample?.lang, module?.lang, service?.lang, summary?.lang]).toEqual(['sh', '', 'js', 'sh', ''])
  await mkdir(join(app, '.email-webhooks'))
  const store = new SqliteDedupStore({ path: join(app, '.email-webhooks/dedup.db') })
  try {
    const queued = await queueEvents(store, 3)
    for (let i = 0; i < 3; i++) {
      const lease = await store.inbox?.take({ leaseMs: 60_000, ordered: false })
      if (lease) await store.inbox?.fail(lease, { error: 'Error: connect ECONNREFUSED 127.0.0.1:5432', retryInMs: null })
    }
    await writeFile(join(app, 'package.json'), '{ "type": "module" }\n')
    await writeFile(join(app, 'handlers.js'), module?.code ?? '')
    const bounced = join(app, 'bounced.log')
    await writeFile(
      join(app, 'db.js'),
      `import { appendFileSync } from 'node:fs'\nexport async function markBounced(emailId) { appendFileSync(${JSON.stringify(bounced)}, emailId + '\\n') }\n`,
    )
    const outputs: string[] = []
    const stderrs: string[] = []
    for (const line of (commands?.code ?? '').trim().split('\n')) {
      const args = line
        .replace(/^npx --no-install email-webhooks /, '')
        .replace('<id>', queued[0]?.id ?? '')
        .split(' ')
      const result = await runCli(args, { cwd: app })
      expect([line, result.code], result.stderr).toEqual([line, 0])
      outputs.push(result.stdout)
      stderrs.push(result.stderr)
    }
    const [, list, , retry, work, purge] = outputs
    // The sample shows the store line (stderr, with the app folder as /app), then the table (stdout).
    const [storeLine, header] = sample?.code.split('\n') ?? []
    expect(stderrs[1]?.split('\n')[0]?.replace(app, '/app')).toBe(storeLine)
    expect(list?.split('\n')[0]?.split(/ {2,}/)).toEqual(header?.split(/ {2,}/))
    expect(list).toMatch(/ dead +1 +.* Error: connect ECONNREFUSED 127\.0\.0\.1:5432\n/)
    expect(retry).toBe('3 dead entries made pending: a worker takes them now.\n')
    expect(work?.split('\n')[1]).toBe(summary?.code.trim())
    expect(purge).toBe('0 dead entries purged (ended more than 7d ago).\n')
    expect(lines(bounced).sort()).toEqual(queued.map((q) => q.emailId).sort())

    const args = (service?.code ?? '')
      .trim()
      .replace(/^npx --no-install email-webhooks /, '')
      .split(' ')
    const running = await runCli(args, {
      cwd: app,
      onSpawn: (child) => {
        let out = ''
        const onData = (chunk: Buffer) => {
          out += chunk.toString()
          if (!out.includes('SIGTERM stops it.')) return
          child.stdout?.off('data', onData)
          child.kill('SIGTERM')
        }
        child.stdout?.on('data', onData)
      },
    })
    expect([running.code, running.stdout], running.stderr).toEqual([0, expect.stringContaining('concurrency 8, up to 5 attempts')])
    expect(running.stdout).toContain('Stopped (SIGTERM): 0 handled')
  } finally {
    await store.close()
  }
}, 180_000)
