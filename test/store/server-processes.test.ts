/**
 * PostgresDedupStore and RedisDedupStore shared by several OS processes, against real servers:
 * the same race and SIGKILL cases as sqlite-processes.test.ts, and a crash of the server itself.
 */
import { type ChildProcess, fork } from 'node:child_process'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { type ClaimResult, type DedupStore, DedupStoreError } from '@email-webhooks/core'
import { PostgresDedupStore } from '@email-webhooks/core/postgres'
import { RedisDedupStore } from '@email-webhooks/core/redis'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { type RunningServer, startPostgres, startRedis } from '../services/servers.js'

const CHILD = join(dirname(fileURLToPath(import.meta.url)), 'server-store-child.mjs')
const LONG = { leaseMs: 60_000, retentionMs: 3_600_000 }
const children = new Set<ChildProcess>()
const servers: Partial<Record<Kind, RunningServer>> = {}
type Kind = 'postgres' | 'redis'

beforeAll(async () => {
  ;[servers.postgres, servers.redis] = await Promise.all([startPostgres(), startRedis()])
})
afterEach(() => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
  children.clear()
})
afterAll(async () => {
  await Promise.all([servers.postgres?.stop(), servers.redis?.stop()])
})

type Message =
  | { type: 'ready' }
  | { type: 'result'; acquired: string[]; duplicate: number; inFlight: number }
  | { type: 'claimed'; status: ClaimResult['status']; attempt: number; before: number; after: number }
  | { type: 'completed'; key: string; ok: boolean }

const urlOf = (kind: Kind) => (servers[kind] as RunningServer).url
const openStore = (kind: Kind): DedupStore =>
  kind === 'postgres' ? new PostgresDedupStore({ connectionString: urlOf(kind) }) : new RedisDedupStore({ url: urlOf(kind) })

function spawnChild(kind: Kind, prefix: string, ...args: string[]): ChildProcess {
  const child = fork(CHILD, [kind, urlOf(kind), ...args], {
    cwd: dirname(CHILD),
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    env: { ...process.env, KEY_PREFIX: prefix },
  })
  children.add(child)
  return child
}

function nextMessage<T extends Message['type']>(child: ChildProcess, type: T, timeoutMs = 20_000): Promise<Extract<Message, { type: T }>> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => done(new Error(`no '${type}' message within ${timeoutMs} ms`)), timeoutMs)
    const onMessage = (message: Message) => {
      if (message.type === type) done(undefined, message as Extract<Message, { type: T }>)
    }
    const onExit = (code: number | null, signal: string | null) => done(new Error(`child exited (${code ?? signal}) before '${type}'`))
    function done(error?: Error, message?: Extract<Message, { type: T }>) {
      clearTimeout(timer)
      child.off('message', onMessage)
      child.off('exit', onExit)
      if (error) reject(error)
      else resolve(message as Extract<Message, { type: T }>)
    }
    child.on('message', onMessage)
    child.once('exit', onExit)
  })
}

function killed(child: ChildProcess): Promise<string | null> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve(child.signalCode)
    else child.once('exit', (_code, signal) => resolve(signal))
    child.kill('SIGKILL')
  })
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))
const newPrefix = () => `${crypto.randomUUID()}:`

describe.each(['postgres', 'redis'] as const)('%s store shared by several OS processes', (kind) => {
  it('grants each of 500 event ids to exactly one of 4 racing processes', async () => {
    const prefix = newPrefix()
    const count = 500
    // Two pairs of racers: each pair walks the ids in the same shuffled order (head-to-head on
    // every key), the pairs in different orders (crossing each other all along the run).
    const racers = Array.from({ length: 4 }, (_, index) => spawnChild(kind, prefix, 'race', String(count), String(index % 2)))
    await Promise.all(racers.map((child) => nextMessage(child, 'ready')))
    const results = racers.map((child) => nextMessage(child, 'result', 60_000))
    for (const child of racers) child.send('go')
    const reports = await Promise.all(results)

    const all = reports.flatMap((report) => report.acquired)
    expect(all).toHaveLength(count)
    expect(new Set(all).size).toBe(count)
    for (const report of reports) expect(report.acquired.length + report.duplicate + report.inFlight).toBe(count)
    console.log(
      `${kind}: per process acquired/duplicate/in_flight: ${reports.map((r) => `${r.acquired.length}/${r.duplicate}/${r.inFlight}`).join(', ')}`,
    )
    // The race was real: more than one process won keys.
    expect(reports.filter((report) => report.acquired.length > 0).length).toBeGreaterThanOrEqual(2)

    // Everything the racers completed is a duplicate for a fifth connection.
    const store = openStore(kind)
    try {
      for (let i = 0; i < count; i++) expect((await store.claim(`${prefix}race-${i}`, LONG)).status).toBe('duplicate')
    } finally {
      await store.close?.()
    }
  }, 90_000)

  it('keeps a key claimed by a process killed with SIGKILL in flight until its lease ends, then grants attempt 2', async () => {
    const prefix = newPrefix()
    const leaseMs = 1500
    const child = spawnChild(kind, prefix, 'hold', 'held-key', String(leaseMs))
    const claimed = await nextMessage(child, 'claimed')
    expect(claimed).toMatchObject({ status: 'acquired', attempt: 1 })
    expect(await killed(child)).toBe('SIGKILL')

    // The lease is on the server's clock; on this machine it ends in [before + leaseMs, after + leaseMs].
    const store = openStore(kind)
    try {
      const seen: { status: string; at: number; attempt?: number; retryAfterMs?: number }[] = []
      const deadline = claimed.after + leaseMs + 3_000
      for (let i = 0; i < 100 && Date.now() < deadline; i++) {
        const result = await store.claim(`${prefix}held-key`, LONG)
        const at = Date.now()
        if (result.status === 'acquired') {
          seen.push({ status: result.status, at, attempt: result.claim.attempt })
          break
        }
        seen.push({ status: result.status, at, ...(result.status === 'in_flight' ? { retryAfterMs: result.retryAfterMs } : {}) })
        await sleep(100)
      }
      const last = seen.at(-1)
      expect(seen.length).toBeGreaterThanOrEqual(2)
      expect(seen.slice(0, -1).every((entry) => entry.status === 'in_flight')).toBe(true)
      expect(seen[0]?.retryAfterMs).toBeGreaterThan(0)
      expect(seen[0]?.retryAfterMs).toBeLessThanOrEqual(leaseMs)
      expect(last?.status).toBe('acquired')
      expect(last?.attempt).toBe(2)
      expect(last?.at).toBeGreaterThanOrEqual(claimed.before + leaseMs)
    } finally {
      await store.close?.()
    }
  }, 30_000)

  it('remembers every key a process reported completed before it was killed with SIGKILL', async () => {
    const prefix = newPrefix()
    const child = spawnChild(kind, prefix, 'complete', '5000')
    const reported: string[] = []
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('fewer than 50 completions within 20 s')), 20_000)
      child.on('message', (message: Message) => {
        if (message.type !== 'completed') return
        expect(message.ok).toBe(true)
        reported.push(message.key)
        if (reported.length === 50) {
          clearTimeout(timer)
          child.kill('SIGKILL')
          resolve()
        }
      })
    })
    expect(await killed(child)).toBe('SIGKILL')
    expect(reported).toHaveLength(50)

    const store = openStore(kind)
    try {
      for (const key of reported) expect({ key, status: (await store.claim(key, LONG)).status }).toEqual({ key, status: 'duplicate' })
    } finally {
      await store.close?.()
    }
  }, 30_000)

  it('keeps every acknowledged completion through a hard crash and restart of the server, and the same store reconnects', async () => {
    const prefix = newPrefix()
    const server = servers[kind] as RunningServer
    const store = openStore(kind)
    const keys = Array.from({ length: 200 }, (_, i) => `${prefix}server-crash-${i}`)
    try {
      for (const key of keys) {
        const result = await store.claim(key, LONG)
        if (result.status !== 'acquired') throw new Error(`${key} was ${result.status}`)
        expect(await store.complete(result.claim, LONG)).toBe(true)
      }
      // A claim in flight at the crash: after the restart it is still held (or its record gone), never done.
      const held = await store.claim(`${prefix}held-through-crash`, LONG)
      expect(held.status).toBe('acquired')
      await server.crashAndRestart()

      // The store that was open during the crash recovers: calls fail with connection_failed until it reconnects.
      const failures: string[] = []
      let first: ClaimResult | undefined
      for (let i = 0; i < 50 && !first; i++) {
        try {
          first = await store.claim(keys[0] as string, LONG)
        } catch (error) {
          expect(error).toBeInstanceOf(DedupStoreError)
          failures.push((error as DedupStoreError).code)
          await sleep(100)
        }
      }
      expect(first?.status).toBe('duplicate')
      expect(failures.every((code) => code === 'connection_failed')).toBe(true)
      const after = openStore(kind)
      try {
        for (const key of keys) expect({ key, status: (await after.claim(key, LONG)).status }).toEqual({ key, status: 'duplicate' })
        expect((await after.claim(`${prefix}held-through-crash`, LONG)).status).toBe('in_flight')
      } finally {
        await after.close?.()
      }
    } finally {
      await store.close?.()
    }
  }, 60_000)
})
