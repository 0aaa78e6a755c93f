/**
 * Inbox mode across kill -9, with real processes on one SQLite file: the web process dies right
 * after its 200 (the event is in the inbox, nothing lost); a worker dies in the middle of a handler
 * (its lease lapses, another worker takes the entry again, counted as a second attempt, and the
 * handler's work lands once).
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { SqliteDedupStore } from '@email-webhooks/core/sqlite'
import { createSignedDelivery } from '@email-webhooks/core/testing'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { scaled } from '../support/time.js'

const CHILD = fileURLToPath(new URL('./inbox-child.mjs', import.meta.url))
const dir = mkdtempSync(join(tmpdir(), 'email-webhooks-inbox-crash-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const children: ChildProcess[] = []
afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL')
})

function child(...args: string[]): ChildProcess {
  return childWith({}, ...args)
}

/** A child with `inbox` as its worker's inbox options. */
function childWith(inbox: Record<string, number>, ...args: string[]): ChildProcess {
  const env = Object.keys(inbox).length > 0 ? { ...process.env, INBOX_OPTIONS: JSON.stringify(inbox) } : process.env
  const proc = spawn(process.execPath, [CHILD, ...args], { stdio: ['pipe', 'pipe', 'inherit'], env })
  children.push(proc)
  return proc
}

function killed(proc: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (proc.exitCode !== null || proc.signalCode !== null) return resolve()
    proc.once('exit', () => resolve())
    proc.kill('SIGKILL')
  })
}

/** The journal's lines once `done` says so, polling every 20 ms for at most `ms`. */
async function journalUntil(path: string, done: (lines: string[]) => boolean, ms = 15_000): Promise<string[]> {
  const until = Date.now() + ms
  for (;;) {
    const lines = existsSync(path) ? readFileSync(path, 'utf8').trim().split('\n').filter(Boolean) : []
    if (done(lines)) return lines
    if (Date.now() > until) throw new Error(`journal ${path} never got there: ${JSON.stringify(lines)}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

/**
 * The inbox entry once the worker has marked it `state` (the journal's "done" line is written by
 * the handler, a moment before the worker records the entry done), polling every 20 ms for at most `ms`.
 */
async function entryWhen(db: string, key: string, state: string, ms = 15_000): Promise<unknown> {
  const store = new SqliteDedupStore({ path: db })
  try {
    const until = Date.now() + ms
    for (;;) {
      const entry = await store.inbox?.get(key)
      if (entry?.state === state || Date.now() > until) return entry
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
  } finally {
    await store.close()
  }
}

describe('inbox mode under kill -9 (SQLite file, real processes)', () => {
  it('keeps an event answered 200 by a web process killed right after the answer; a worker process handles it once', async () => {
    const db = join(dir, 'web.db')
    const journal = join(dir, 'web.journal')
    const delivery = await createSignedDelivery({ type: 'email.bounced' })
    const web = child('web', db)
    web.stdin?.end(JSON.stringify({ headers: delivery.headers, body: delivery.body }))
    const answer = await new Promise<string>((resolve) => web.stdout?.once('data', (chunk) => resolve(String(chunk))))
    await killed(web)
    expect(answer.trim()).toBe('200 {"ok":true,"queued":true}')

    child('worker', db, journal, 'work')
    const lines = await journalUntil(journal, (l) => l.includes(`done ${delivery.event.id}`))
    expect(lines).toEqual([`start ${delivery.event.id}`, `done ${delivery.event.id}`])
    expect(await entryWhen(db, `default:${delivery.event.id}`, 'done')).toMatchObject({ state: 'done', attempts: 1 })
  })

  it('takes an entry again once the lease of a worker killed mid-handler lapses: two attempts, the handler ends once', async () => {
    const db = join(dir, 'worker.db')
    const journal = join(dir, 'worker.journal')
    const delivery = await createSignedDelivery({ type: 'email.bounced' })
    const web = child('web', db)
    web.stdin?.end(JSON.stringify({ headers: delivery.headers, body: delivery.body }))
    await new Promise((resolve) => web.stdout?.once('data', resolve))
    await killed(web)

    const first = child('worker', db, journal, 'hang')
    await journalUntil(journal, (l) => l.length === 1)
    await killed(first)
    const killedAt = Date.now()
    child('worker', db, journal, 'work')
    const lines = await journalUntil(journal, (l) => l.some((line) => line.startsWith('done')))
    // Taken again only after the lease (1.5 s) of the killed worker lapsed.
    expect(Date.now() - killedAt).toBeGreaterThan(1_000)
    expect(lines).toEqual([`start ${delivery.event.id}`, `start ${delivery.event.id}`, `done ${delivery.event.id}`])
    expect(await entryWhen(db, `default:${delivery.event.id}`, 'done')).toMatchObject({ state: 'done', attempts: 2, lastError: null })
    const store = new SqliteDedupStore({ path: db })
    try {
      // The dedup record says handled: a redelivery now is a duplicate.
      expect(
        await store.inbox?.enqueue(
          { key: `default:${delivery.event.id}`, type: 'email.bounced', payload: delivery.body, timestamp: 1 },
          { retentionMs: 60_000 },
        ),
      ).toBe('duplicate')
    } finally {
      await store.close()
    }
  }, 30_000)

  /** Records `count` signed events in the inbox of `db`, as a web process does; their ids. */
  async function enqueue(db: string, count: number): Promise<string[]> {
    const store = new SqliteDedupStore({ path: db })
    try {
      const ids: string[] = []
      for (let i = 0; i < count; i++) {
        const delivery = await createSignedDelivery({ type: 'email.bounced' })
        const key = `default:${delivery.event.id}`
        await store.inbox?.enqueue({ key, type: 'email.bounced', payload: delivery.body, timestamp: 1 }, { retentionMs: 3_600_000 })
        ids.push(delivery.event.id)
      }
      return ids
    } finally {
      await store.close()
    }
  }

  it('renews the lease of a handler that runs longer than it: another worker never takes its entry while the first lives', async () => {
    const db = join(dir, 'renew.db')
    const journal = join(dir, 'renew.journal')
    const [id] = await enqueue(db, 1)
    // A 1.5 s lease, renewed every 0.5 s; the handler runs 4 s, its deadline is 10 s.
    const inbox = { handlerTimeoutMs: 10_000, leaseMs: 1_500, pollMs: 20, concurrency: 1 }
    childWith(inbox, 'worker', db, journal, 'slow')
    await journalUntil(journal, (l) => l.length === 1)
    // A second worker, polling every 20 ms the whole time the first one's handler runs.
    childWith(inbox, 'worker', db, journal, 'work')
    const lines = await journalUntil(journal, (l) => l.some((line) => line.startsWith('done')))
    expect(lines).toEqual([`start ${id}`, `done ${id}`])
    expect(await entryWhen(db, `default:${id}`, 'done')).toMatchObject({ state: 'done', attempts: 1 })
  }, 30_000)

  it('handles every entry of a worker killed -9 mid-handler within one short lease and a backoff of its restart, not the handler deadline and a minute', async () => {
    const db = join(dir, 'short.db')
    const journal = join(dir, 'short.journal')
    const ids = await enqueue(db, 20)
    // The default handler deadline (5 min): before leases were renewed, an entry held by a dead worker waited 6 min.
    const inbox = { leaseMs: 2_000, pollMs: 20, concurrency: 4 }
    const first = childWith(inbox, 'worker', db, journal, 'hang')
    await journalUntil(journal, (l) => l.length === 4)
    await killed(first)
    const restartedAt = Date.now()
    childWith(inbox, 'worker', db, journal, 'work')
    const lines = await journalUntil(journal, (l) => l.filter((line) => line.startsWith('done')).length === 20, 20_000)
    const tookMs = Date.now() - restartedAt
    expect(new Set(lines.filter((line) => line.startsWith('done')))).toEqual(new Set(ids.map((id) => `done ${id}`)))
    // The four held by the dead worker waited for their 2 s lease; nothing waited for the handler's deadline.
    expect(tookMs).toBeLessThan(scaled(15_000))
    const store = new SqliteDedupStore({ path: db })
    try {
      const stats = await store.inbox?.stats()
      expect(stats).toMatchObject({ pending: 0, dead: 0 })
    } finally {
      await store.close()
    }
  }, 40_000)
})
