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

const CHILD = fileURLToPath(new URL('./inbox-child.mjs', import.meta.url))
const dir = mkdtempSync(join(tmpdir(), 'email-webhooks-inbox-crash-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const children: ChildProcess[] = []
afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL')
})

function child(...args: string[]): ChildProcess {
  const proc = spawn(process.execPath, [CHILD, ...args], { stdio: ['pipe', 'pipe', 'inherit'] })
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
})
