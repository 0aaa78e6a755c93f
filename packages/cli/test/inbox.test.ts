/**
 * `email-webhooks inbox list | show | retry | purge | stats` on a real SQLite file, filled by a real
 * inbox-mode receiver: what each prints (never a payload, unless `show --payload`), JSON, the
 * namespace, and the usage errors (exit 2, saying what to add; no file created).
 */
import { existsSync, mkdirSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SqliteDedupStore } from '@email-webhooks/core/sqlite'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { runCli } from './helpers/cli.js'
import { queueEvents } from './helpers/inbox.js'

// Several CLI runs each, on a machine the other suites load too.
const SLOW = 120_000
let dir: string
const closers: Array<() => unknown> = []

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cli-inbox-'))
})
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close()
})
afterAll(() => rm(dir, { recursive: true, force: true }))

/** A new SQLite store file, left open (as a running receiver's would be). */
function sqliteStore(name: string): { path: string; store: SqliteDedupStore } {
  const path = join(dir, name)
  const store = new SqliteDedupStore({ path })
  closers.push(() => store.close())
  return { path, store }
}

const inbox = (args: string[], env: Record<string, string> = {}, cwd = dir) => runCli(['inbox', ...args], { env, cwd })

describe('inbox list, show and stats', () => {
  it(
    'lists each entry (id, type, state, attempts, age, next attempt, last error) and never its payload; --state, --limit, --json',
    async () => {
      const { path, store } = sqliteStore('list.db')
      const queued = await queueEvents(store, 3)
      const list = await inbox(['list', '--store', path])
      expect(list.code, list.stderr).toBe(0)
      const [header, ...rows] = list.stdout.trimEnd().split('\n')
      expect(header).toMatch(/^id +type +state +attempts +age +next attempt +last error$/)
      expect(rows.map((row) => row.split(/ +/).slice(0, 4))).toEqual(queued.map((q) => [q.id, 'email.bounced', 'pending', '0']))
      for (const row of rows) expect(row).toMatch(/ (\d+ms|\d+s) +now$/)
      for (const { emailId } of queued) expect(list.stdout + list.stderr).not.toContain(emailId)

      const json = JSON.parse((await inbox(['list', '--json', '--store', path])).stdout).entries
      expect(json.map((e: { id: string }) => e.id)).toEqual(queued.map((q) => q.id))
      expect(json[0]).toMatchObject({
        key: `default:${queued[0]?.id}`,
        type: 'email.bounced',
        state: 'pending',
        attempts: 0,
        lastError: null,
      })
      expect(json[0]).not.toHaveProperty('payload')

      const limited = await inbox(['list', '--limit', '2', '--store', path])
      expect(limited.stdout.trimEnd().split('\n')).toHaveLength(3)
      expect(limited.stderr).toContain('(the first 2 entries, oldest first: --limit for more)')
      const dead = await inbox(['list', '--state', 'dead', '--store', path])
      expect(dead.stdout).toContain('(none)')
    },
    SLOW,
  )

  it(
    'shows one entry in full, its payload only with --payload (said in --help), and exits 1 for an unknown id',
    async () => {
      const { path, store } = sqliteStore('show.db')
      const [event] = await queueEvents(store, 1)
      if (!event) throw new Error('nothing queued')
      const show = await inbox(['show', event.id, '--store', path])
      expect(show.code, show.stderr).toBe(0)
      expect(show.stdout).toMatch(new RegExp(`^id +${event.id}\\nkey +default:${event.id}\\ntype +email\\.bounced\\nstate +pending\\n`))
      expect(show.stdout).toContain('not shown (it can hold recipient addresses): add --payload')
      expect(show.stdout).not.toContain(event.emailId)
      const withPayload = await inbox(['show', event.id, '--payload', '--store', path])
      expect(withPayload.stdout.trimEnd().endsWith(`\n${event.body}`)).toBe(true)
      const json = JSON.parse((await inbox(['show', event.id, '--json', '--store', path])).stdout)
      expect(json).toMatchObject({ id: event.id, state: 'pending', timestamp: expect.any(Number) })
      expect(json).not.toHaveProperty('payload')
      const jsonPayload = JSON.parse((await inbox(['show', event.id, '--json', '--payload', '--store', path])).stdout)
      expect(jsonPayload.payload).toBe(event.body)

      const missing = await inbox(['show', 'no-such-id', '--store', path])
      expect([missing.code, missing.stdout]).toEqual([1, ''])
      expect(missing.stderr).toContain('no inbox entry no-such-id (namespace "default")')
      expect((await inbox(['show', '--help'])).stdout.replace(/\s+/g, ' ')).toContain('it can hold recipient addresses (personal data)')
    },
    SLOW,
  )

  it(
    'gives the depth, running and dead counts and the lag, as text and JSON; reads EMAIL_WEBHOOKS_DB, else the default file',
    async () => {
      const { path, store } = sqliteStore('stats.db')
      await queueEvents(store, 2)
      const lease = await store.inbox?.take({ leaseMs: 60_000, ordered: false })
      if (!lease) throw new Error('nothing to take')
      const text = await inbox(['stats', '--store', path])
      expect(text.stdout).toMatch(/^pending \(depth\) +running +dead +lag \(oldest pending\)\n1 +1 +0 +(\d+ms|\d+s)\n$/)
      const json = JSON.parse((await inbox(['stats', '--json'], { EMAIL_WEBHOOKS_DB: path })).stdout)
      expect(json).toMatchObject({ pending: 1, running: 1, dead: 0, lagMs: expect.any(Number), oldestPendingAt: expect.any(String) })

      const app = join(dir, 'app')
      mkdirSync(join(app, '.email-webhooks'), { recursive: true })
      const fallback = new SqliteDedupStore({ path: join(app, '.email-webhooks/dedup.db') })
      closers.push(() => fallback.close())
      await queueEvents(fallback, 3)
      expect(JSON.parse((await inbox(['stats', '--json'], {}, app)).stdout).pending).toBe(3)
    },
    SLOW,
  )
})

describe('the store each inbox command reads', () => {
  it(
    'is named on stderr (text) and as store in --json by stats, list, show, retry and purge, from --store, EMAIL_WEBHOOKS_DB or the default path',
    async () => {
      const { path, store } = sqliteStore('named.db')
      const [event] = await queueEvents(store, 1)
      if (!event) throw new Error('nothing queued')
      const fromOption = `SQLite file ${path} (from --store)`
      const texts: Array<[string[], string]> = [
        [['stats', '--store', path], fromOption],
        [['list', '--store', path], fromOption],
        [['show', event.id, '--store', path], fromOption],
        [['retry', event.id, '--store', path], fromOption],
        [['purge', '--dead', '--older-than', '7d', '--store', path], fromOption],
        [['stats'], `SQLite file ${path} (from EMAIL_WEBHOOKS_DB)`],
      ]
      const runs = await Promise.all(texts.map(([args]) => inbox(args, args.includes('--store') ? {} : { EMAIL_WEBHOOKS_DB: path })))
      for (const [i, [args, description]] of texts.entries()) {
        expect([args, runs[i]?.stderr.split('\n')[0]]).toEqual([args, `Inbox of ${description}.`])
        expect(runs[i]?.stdout).not.toContain(description)
      }
      const jsons = await Promise.all(
        texts.slice(0, 5).map(([args]) => inbox([...args, '--json']).then((result) => [result.stderr, JSON.parse(result.stdout)] as const)),
      )
      for (const [stderr, doc] of jsons) {
        expect(doc.store).toBe(fromOption)
        expect(stderr).toBe('')
      }
      expect(jsons[1]?.[1].entries.map((e: { id: string }) => e.id)).toEqual([event.id])

      // A user in the app's folder without --store reads its default file, and is told so.
      const app = join(dir, 'named-app')
      mkdirSync(join(app, '.email-webhooks'), { recursive: true })
      const fallback = new SqliteDedupStore({ path: join(app, '.email-webhooks/dedup.db') })
      closers.push(() => fallback.close())
      const stats = await inbox(['stats'], {}, app)
      expect(stats.stderr).toContain(
        `Inbox of SQLite file ${join(app, '.email-webhooks/dedup.db')} (from the default path ./.email-webhooks/dedup.db).`,
      )
    },
    SLOW,
  )
})

describe('inbox retry and purge', () => {
  it('shows what a retried entry went through: done after the retry, its attempts before it, and its last error as from before the retry', async () => {
    const { path, store } = sqliteStore('history.db')
    await queueEvents(store, 1)
    for (let attempt = 1; attempt <= 3; attempt++) {
      const lease = await store.inbox?.take({ leaseMs: 60_000, ordered: false })
      if (lease) await store.inbox?.fail(lease, { error: 'Error: CRM is down', retryInMs: attempt === 3 ? null : 0 })
    }
    const [entry] = (await store.inbox?.list({ state: 'dead' })) ?? []
    const id = (entry?.key ?? '').slice('default:'.length)
    expect((await inbox(['retry', id, '--store', path])).code).toBe(0)
    const lease = await store.inbox?.take({ leaseMs: 60_000, ordered: false })
    if (lease) await store.inbox?.finish(lease, { retentionMs: 60_000 })
    const shown = await inbox(['show', id, '--store', path])
    expect(shown.code, shown.stderr).toBe(0)
    expect(shown.stdout).toMatch(/^state +done$/m)
    expect(shown.stdout).toMatch(/^attempts +1 \(\+3 before the retry\)$/m)
    expect(shown.stdout).toMatch(/^retried +\d{4}-/m)
    expect(shown.stdout).toMatch(/^last error \(before the retry\) +Error: CRM is down, \d{4}-/m)
    const json = JSON.parse((await inbox(['show', id, '--json', '--store', path])).stdout)
    expect(json).toMatchObject({
      state: 'done',
      attempts: 1,
      attemptsBeforeRetry: 3,
      lastError: 'Error: CRM is down',
      lastErrorBeforeRetry: true,
    })
  })

  it(
    'retries given dead entries or every one, naming those that are not dead; purges dead entries older than --older-than',
    async () => {
      const { path, store } = sqliteStore('retry.db')
      await queueEvents(store, 3)
      for (let i = 0; i < 2; i++) {
        const lease = await store.inbox?.take({ leaseMs: 60_000, ordered: false })
        if (lease) await store.inbox?.fail(lease, { error: 'Error: boom', retryInMs: null })
      }
      const idOf = (key: string) => key.slice('default:'.length)
      const [dead] = ((await store.inbox?.list({ state: 'dead' })) ?? []).map((e) => idOf(e.key))
      const [pending] = ((await store.inbox?.list({ state: 'pending' })) ?? []).map((e) => idOf(e.key))
      const one = await inbox(['retry', dead as string, pending as string, '--store', path])
      expect(one.code, one.stderr).toBe(0)
      expect(one.stdout).toBe(`1 dead entry made pending: a worker takes it now.\n${pending}: not dead (pending), left as it is\n`)
      const unknown = await inbox(['retry', 'no-such-id', '--json', '--store', path])
      expect(unknown.code).toBe(1)
      expect(JSON.parse(unknown.stdout)).toMatchObject({ retried: 0, skipped: [{ id: 'no-such-id', state: 'not found' }] })
      expect((await inbox(['retry', '--dead', '--store', path])).stdout).toBe('1 dead entry made pending: a worker takes it now.\n')

      for (let i = 0; i < 3; i++) {
        const lease = await store.inbox?.take({ leaseMs: 60_000, ordered: false })
        if (lease) await store.inbox?.fail(lease, { error: 'Error: boom', retryInMs: null })
      }
      expect((await inbox(['purge', '--dead', '--older-than', '7d', '--store', path])).stdout).toBe(
        '0 dead entries purged (ended more than 7d ago).\n',
      )
      await new Promise((resolve) => setTimeout(resolve, 20))
      const purged = await inbox(['purge', '--dead', '--older-than', '10ms', '--json', '--store', path])
      expect(JSON.parse(purged.stdout)).toEqual({ store: `SQLite file ${path} (from --store)`, purged: 3, olderThanMs: 10 })
      expect(await store.inbox?.stats()).toMatchObject({ pending: 0, running: 0, dead: 0 })
    },
    SLOW,
  )

  it(
    'refuses bad flags with exit 2 and a message saying what to add, and a missing store file without creating it',
    async () => {
      const { path } = sqliteStore('usage.db')
      const cases: Array<[string[], string]> = [
        [['purge', '--store', path], 'add --dead and --older-than <duration> (e.g. --older-than 7d)'],
        [['purge', '--dead', '--store', path], 'add --older-than <duration> (e.g. --older-than 7d).'],
        [['purge', '--older-than', '7d', '--store', path], 'add --dead.'],
        [
          ['purge', '--dead', '--older-than', '7x', '--store', path],
          "option '--older-than <duration>' argument '7x' is invalid. Give a duration such as 7d, 36h, 90m or 30s",
        ],
        [['retry', '--store', path], 'Give the webhook-ids of dead entries (`inbox list --state dead`), or --dead for every one.'],
        [['retry', 'x', '--dead', '--store', path], 'Give webhook-ids or --dead (every dead entry), not both.'],
        [['list', '--state', 'gone', '--store', path], 'Allowed choices are pending, running, dead, done'],
        [['list', '--limit', '0', '--store', path], "option '--limit <n>' argument '0' is invalid. Give a whole number from 1 to 10000."],
        [['stats', '--store', join(dir, 'dedpu.db')], `No SQLite file at ${join(dir, 'dedpu.db')} (from --store)`],
        [['stats', '--store', 'mysql://db.internal/app'], '--store takes a postgres://, postgresql://, redis:// or rediss:// URL'],
      ]
      for (const [args, message] of cases) {
        const result = await inbox(args)
        expect([result.code, result.stdout, args], result.stderr).toEqual([2, '', args])
        expect(result.stderr).toContain(message)
      }
      expect(existsSync(join(dir, 'dedpu.db'))).toBe(false)
      const empty = join(dir, 'empty')
      mkdirSync(empty, { recursive: true })
      const none = await inbox(['stats'], {}, empty)
      expect([none.code, none.stderr]).toEqual([2, expect.stringContaining('No store: pass --store')])
    },
    SLOW,
  )
})
