/**
 * `email-webhooks inbox work` as its own process on a real SQLite file filled by a real inbox-mode
 * receiver: a throwing handler makes entries dead after maxAttempts, `retry --dead` and a fixed
 * handler make them done; SIGTERM waits for the running entries and exits 0 with no entry handled
 * twice; the namespace must be the receiver's; bad modules and flags are usage errors.
 */
import type { ChildProcess } from 'node:child_process'
import { appendFile, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SqliteDedupStore } from '@email-webhooks/core/sqlite'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { scaled } from '../../../test/support/time.js'
import { type RunOptions, runCli } from './helpers/cli.js'
import { lines, queueEvents, writeHandlers } from './helpers/inbox.js'

const SLOW = 180_000
let dir: string
const closers: Array<() => unknown> = []

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cli-inbox-work-'))
})
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close()
})
afterAll(() => rm(dir, { recursive: true, force: true }))

function sqliteStore(name: string): { path: string; store: SqliteDedupStore } {
  const path = join(dir, name)
  const store = new SqliteDedupStore({ path })
  closers.push(() => store.close())
  return { path, store }
}

const inbox = (args: string[], onSpawn?: RunOptions['onSpawn']) => runCli(['inbox', ...args], { cwd: dir, ...(onSpawn ? { onSpawn } : {}) })

/** Sends SIGTERM once a handler of `log`'s module runs (its start logged, its end not yet), or after 60 s. */
function sigtermWhenRunning(child: ChildProcess, log: string): void {
  const started = Date.now()
  const poll = setInterval(() => {
    if (lines(`${log}.started`).length > lines(log).length || Date.now() - started > 60_000) {
      clearInterval(poll)
      child.kill('SIGTERM')
    }
  }, 20)
}

/** Sends SIGTERM again once the first is answered waiting for a running entry; returns when it was sent (0 until then). */
function sigtermAgainWhenWaiting(child: ChildProcess): () => number {
  let sentAt = 0
  let stderr = ''
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString()
    if (sentAt === 0 && stderr.includes('SIGTERM: stopping; waiting for 1 running entry')) {
      sentAt = performance.now()
      child.kill('SIGTERM')
    }
  })
  return () => sentAt
}

/** Each value once, and these values. */
function once(values: string[], expected: string[]): void {
  expect([...values].sort()).toEqual([...expected].sort())
}

describe('inbox work', () => {
  it(
    'makes entries dead after maxAttempts (one line each), then retry --dead and a fixed handler mark them done, each handled once',
    async () => {
      const { path, store } = sqliteStore('work.db')
      const queued = await queueEvents(store, 3)
      const ids = queued.map((q) => q.id)
      const failing = '{ logger: false, inbox: { maxAttempts: 2, retryBaseMs: 1, retryMaxMs: 1 } }'
      await writeHandlers(join(dir, 'failing.mjs'), join(dir, 'failing.log'), { fail: 'boom: the database is down', options: failing })
      // An entry whose retry is not due yet waits for the next run: at most maxAttempts runs.
      let stderr = ''
      const codes: number[] = []
      for (let run = 0; run < 2 && (await store.inbox?.stats())?.dead !== 3; run++) {
        const result = await inbox(['work', '--once', '--handlers', './failing.mjs', '--store', path])
        expect(result.stdout).toMatch(
          /^Handling what is due in the inbox of SQLite file .*: namespace "default", concurrency 4, up to 2 attempts/,
        )
        codes.push(result.code ?? -1)
        stderr += result.stderr
      }
      expect(await store.inbox?.stats()).toMatchObject({ pending: 0, running: 0, dead: 3 })
      expect(codes.at(-1)).toBe(1)
      const deadLines = stderr.split('\n').filter((line) => line.startsWith('dead: '))
      once(
        deadLines.map((line) => line.split(' ')[2] as string),
        ids,
      )
      expect(deadLines[0]).toMatch(
        /^dead: email\.bounced \S+ after 2 attempts \(last error: Error: boom: the database is down\); fix the cause, then `email-webhooks inbox retry \S+` \(or --dead\)\.$/,
      )
      const list = await inbox(['list', '--state', 'dead', '--store', path])
      expect(list.stdout.trimEnd().split('\n').slice(1)).toEqual(
        expect.arrayContaining(
          ids.map((id) => expect.stringMatching(new RegExp(`^${id} +email\\.bounced +dead +2 +.+ +— +Error: boom: the database is down$`))),
        ),
      )

      expect((await inbox(['retry', '--dead', '--store', path])).stdout).toBe('3 dead entries made pending: a worker takes them now.\n')
      await writeHandlers(join(dir, 'fixed.cjs'), join(dir, 'fixed.log'), { commonJs: true })
      const fixed = await inbox(['work', '--once', '--json', '--handlers', 'fixed.cjs', '--store', path])
      expect(fixed.code, fixed.stderr).toBe(0)
      expect(JSON.parse(fixed.stdout)).toMatchObject({
        store: `SQLite file ${path} (from --store)`,
        stoppedBy: 'drained',
        handled: 3,
        dead: 0,
        inbox: { pending: 0, running: 0, dead: 0 },
      })
      once(lines(join(dir, 'fixed.log')), ids)
      const done = JSON.parse((await inbox(['list', '--state', 'done', '--json', '--store', path])).stdout).entries
      expect(done.map((e: { id: string }) => e.id).sort()).toEqual([...ids].sort())
      // Done and recorded: running the worker again handles nothing.
      const again = await inbox(['work', '--once', '--handlers', 'fixed.cjs', '--store', path])
      expect(again.stdout).toContain('Done (--once: nothing more is due): 0 handled, 0 duplicates, 0 failed attempts to retry, 0 dead')
      once(lines(join(dir, 'fixed.log')), ids)
    },
    SLOW,
  )

  it(
    'stops on SIGTERM: waits for the running entries, exits 0, and a later run handles the rest; no entry is handled twice',
    async () => {
      const { path, store } = sqliteStore('sigterm.db')
      const ids = (await queueEvents(store, 6)).map((q) => q.id)
      const log = join(dir, 'slow.log')
      await writeHandlers(join(dir, 'slow.mjs'), log, { delayMs: 600 })
      const result = await inbox(['work', '--concurrency', '2', '--handlers', './slow.mjs', '--store', path], (child) =>
        sigtermWhenRunning(child, log),
      )
      expect([result.signal, result.code], result.stderr).toEqual([null, 0])
      expect(result.stderr).toMatch(
        /^SIGTERM: stopping; waiting for [12] running entr(y|ies) to finish \(each within the handler deadline, 5m\)/m,
      )
      expect(result.stderr).toContain('SIGTERM: no entry is running any more; stopped.')
      expect(result.stdout).toMatch(/Stopped \(SIGTERM\): [1-5] handled, 0 duplicates, 0 failed attempts to retry, 0 dead/)
      expect(await store.inbox?.stats()).toMatchObject({ running: 0, dead: 0 })
      // Every started handler finished before the exit.
      expect(lines(log)).toEqual(expect.arrayContaining(lines(`${log}.started`)))
      expect(lines(log)).toHaveLength(lines(`${log}.started`).length)

      const rest = await inbox(['work', '--once', '--handlers', './slow.mjs', '--store', path])
      expect(rest.code, rest.stderr).toBe(0)
      once(lines(log), ids)
      once(lines(`${log}.started`), ids)
    },
    SLOW,
  )

  it(
    'a second SIGTERM ends it at once by that signal, after the summary so far; the running entry is taken again later and not lost',
    async () => {
      const { path, store } = sqliteStore('forced.db')
      const ids = (await queueEvents(store, 1)).map((q) => q.id)
      const log = join(dir, 'forced.log')
      await writeHandlers(join(dir, 'forced.mjs'), log, { delayMs: 30_000 })
      let forcedAt = () => 0
      const result = await inbox(['work', '--handlers', './forced.mjs', '--store', path], (child) => {
        forcedAt = sigtermAgainWhenWaiting(child)
        sigtermWhenRunning(child, log)
      })
      // Ended by the signal's default action (a shell shows 143), not by process.exit(), which a stuck disk could hold.
      expect([result.signal, result.code], result.stderr).toEqual(['SIGTERM', null])
      expect(performance.now() - forcedAt()).toBeLessThan(scaled(10_000))
      expect(result.stderr).toContain('SIGTERM again: exiting now with 1 entry running; its lease lapses within')
      expect(result.stdout).toMatch(/Stopped \(SIGTERM, forced\): 0 handled/)
      expect(lines(log)).toEqual([])
      // The cut-off entry is still there, running until its lease lapses: nothing was lost.
      expect(await store.inbox?.get(`default:${ids[0]}`)).toMatchObject({ state: 'running' })
    },
    SLOW,
  )

  it(
    'a second SIGTERM that the handlers module traps as well still ends it, with exit 130 after the summary',
    async () => {
      const { path, store } = sqliteStore('trapped.db')
      await queueEvents(store, 1)
      const log = join(dir, 'trapped.log')
      await writeHandlers(join(dir, 'trapped.mjs'), log, { delayMs: 30_000 })
      // A module whose library listens for SIGTERM: the signal raised again would go to it, not end the process.
      await appendFile(join(dir, 'trapped.mjs'), "process.on('SIGTERM', () => {})\n")
      let forcedAt = () => 0
      const result = await inbox(['work', '--handlers', './trapped.mjs', '--store', path], (child) => {
        forcedAt = sigtermAgainWhenWaiting(child)
        sigtermWhenRunning(child, log)
      })
      expect([result.signal, result.code], result.stderr).toEqual([null, 130])
      expect(performance.now() - forcedAt()).toBeLessThan(scaled(10_000))
      expect(result.stdout).toMatch(/Stopped \(SIGTERM, forced\): 0 handled/)
    },
    SLOW,
  )

  it(
    "refuses to start when pending entries belong to another namespace; works them with the receiver's --namespace",
    async () => {
      const { path, store } = sqliteStore('namespace.db')
      const [event] = await queueEvents(store, 1, { namespace: 'shop' })
      if (!event) throw new Error('nothing queued')
      await writeHandlers(join(dir, 'ns.mjs'), join(dir, 'ns.log'))
      const wrong = await inbox(['work', '--once', '--handlers', './ns.mjs', '--store', path])
      expect([wrong.code, wrong.stdout]).toEqual([2, ''])
      expect(wrong.stderr).toContain(
        'The inbox holds pending entries of namespace "shop", and this worker\'s namespace is "default": pass the receiver\'s namespace with --namespace',
      )
      expect((await inbox(['list', '--store', path])).stdout).toContain(`shop:${event.id}`)
      expect((await inbox(['show', event.id, '--namespace', 'shop', '--json', '--store', path])).stdout).toContain(`"id": "${event.id}"`)
      const right = await inbox(['work', '--once', '--namespace', 'shop', '--handlers', './ns.mjs', '--store', path])
      expect(right.code, right.stderr).toBe(0)
      expect(lines(join(dir, 'ns.log'))).toEqual([event.id])
      await writeHandlers(join(dir, 'ns-options.mjs'), join(dir, 'ns.log'), { options: "{ namespace: 'shop' }" })
      const conflict = await inbox(['work', '--once', '--namespace', 'default', '--handlers', './ns-options.mjs', '--store', path])
      expect([conflict.code, conflict.stderr]).toEqual([
        2,
        expect.stringContaining('--namespace "default" differs from the handlers module\'s options.namespace "shop"'),
      ])
    },
    SLOW,
  )

  it(
    "calls the module's close() at the end; a module that keeps a connection open without one is ended 5 s later, saying so",
    async () => {
      const { path, store } = sqliteStore('close.db')
      const [event] = await queueEvents(store, 1)
      const pool = "const pool = setInterval(() => {}, 1000)\nexport const handlers = { 'email.bounced': async () => {} }\n"
      const write = (name: string, source: string) => import('node:fs/promises').then((fs) => fs.writeFile(join(dir, name), source))
      await write('pool.mjs', pool)
      await write('pool-close.mjs', `${pool}export function close() { clearInterval(pool); console.error('pool closed') }\n`)
      const started = Date.now()
      const closing = await inbox(['work', '--once', '--handlers', './pool-close.mjs', '--store', path])
      expect([closing.code, closing.stderr]).toEqual([0, 'pool closed\n'])
      expect(closing.stdout).toContain('1 handled')
      expect(await store.inbox?.get(`default:${event?.id}`)).toMatchObject({ state: 'done' })
      const lingering = await inbox(['work', '--once', '--handlers', './pool.mjs', '--store', path])
      expect(lingering.code).toBe(0)
      expect(lingering.stderr).toContain(
        'email-webhooks: still running 5 s after the command ended: the handlers module keeps something open (a database pool?). Export close() from it to end it; exiting now.',
      )
      expect(Date.now() - started).toBeGreaterThan(5_000)
    },
    SLOW,
  )

  it(
    'refuses a missing, empty or invalid handlers module and bad flags with exit 2, saying what is wrong',
    async () => {
      const { path } = sqliteStore('modules.db')
      await writeHandlers(join(dir, 'ok.mjs'), join(dir, 'ok.log'))
      const write = (name: string, source: string) => import('node:fs/promises').then((fs) => fs.writeFile(join(dir, name), source))
      await write('empty.mjs', 'export const other = 1\n')
      await write('typo.mjs', "export const handlers = { 'email.bounce': async () => {} }\n")
      await write('throws.mjs', "throw new Error('cannot connect')\n")
      await write('options.mjs', 'export const handlers = {}\nexport const options = { inbox: { maxAttempts: 0 } }\n')
      const cases: Array<[string[], string]> = [
        [['work', '--store', path], "required option '--handlers <module>' not specified"],
        [['work', '--handlers', './nope.mjs', '--store', path], `No handlers module at ${join(dir, 'nope.mjs')}`],
        [['work', '--handlers', './empty.mjs', '--store', path], "exports no handlers: export const handlers = { 'email.bounced'"],
        [['work', '--handlers', './typo.mjs', '--store', path], '"email.bounce" is not an email event type'],
        [['work', '--handlers', './throws.mjs', '--store', path], 'Cannot load the handlers module ./throws.mjs: Error: cannot connect.'],
        [['work', '--handlers', './options.mjs', '--store', path], 'inbox.maxAttempts must be a positive whole number, got 0'],
        [
          ['work', '--handlers', './ok.mjs', '--concurrency', '0', '--store', path],
          "option '--concurrency <n>' argument '0' is invalid. Give a whole number from 1 to 256.",
        ],
      ]
      for (const [args, message] of cases) {
        const result = await inbox(args)
        expect([result.code, args], result.stderr).toEqual([2, args])
        expect(result.stderr).toContain(message)
      }
      expect(lines(join(dir, 'ok.log'))).toEqual([])
    },
    SLOW,
  )
})
