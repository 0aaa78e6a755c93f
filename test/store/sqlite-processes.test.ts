import { type ChildProcess, fork } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { ClaimResult } from '@email-webhooks/core'
import { SqliteDedupStore } from '@email-webhooks/core/sqlite'
import { afterAll, afterEach, describe, expect, it } from 'vitest'

const CHILD = join(dirname(fileURLToPath(import.meta.url)), 'sqlite-child.mjs')
const LONG = { leaseMs: 60_000, retentionMs: 3_600_000 }
const dir = mkdtempSync(join(tmpdir(), 'email-webhooks-processes-'))
const children = new Set<ChildProcess>()
let files = 0

afterEach(() => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
  children.clear()
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

type Message =
  | { type: 'ready' }
  | { type: 'result'; acquired: string[]; duplicate: number; inFlight: number }
  | { type: 'claimed'; status: ClaimResult['status']; attempt: number; before: number; after: number }
  | { type: 'completed'; key: string; ok: boolean }

function spawnChild(...args: string[]): ChildProcess {
  const child = fork(CHILD, args, { cwd: dirname(CHILD), stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
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
const newFile = () => join(dir, `db-${files++}.sqlite`)

describe('SqliteDedupStore shared by several OS processes', () => {
  it('grants each of 500 event ids to exactly one of 4 racing processes', async () => {
    const path = newFile()
    const count = 500
    // Two pairs of racers: each pair walks the ids in the same shuffled order (head-to-head on
    // every key), the pairs in different orders (crossing each other all along the run).
    const racers = Array.from({ length: 4 }, (_, index) => spawnChild('race', path, String(count), String(index % 2)))
    await Promise.all(racers.map((child) => nextMessage(child, 'ready')))
    const results = racers.map((child) => nextMessage(child, 'result', 60_000))
    for (const child of racers) child.send('go')
    const reports = await Promise.all(results)

    const all = reports.flatMap((report) => report.acquired)
    expect(all).toHaveLength(count)
    expect(new Set(all).size).toBe(count)
    for (const report of reports) expect(report.acquired.length + report.duplicate + report.inFlight).toBe(count)
    const shares = reports.map((report) => report.acquired.length)
    console.log(
      `per process acquired/duplicate/in_flight: ${reports.map((r) => `${r.acquired.length}/${r.duplicate}/${r.inFlight}`).join(', ')}`,
    )
    // The race was real: more than one process won keys.
    expect(shares.filter((share) => share > 0).length).toBeGreaterThanOrEqual(2)

    // Everything the racers completed is a duplicate for a fifth connection.
    const store = new SqliteDedupStore({ path })
    try {
      for (let i = 0; i < count; i++) expect((await store.claim(`race-${i}`, LONG)).status).toBe('duplicate')
    } finally {
      await store.close()
    }
  }, 90_000)

  it('keeps a key claimed by a process killed with SIGKILL in flight until its lease ends, then grants attempt 2', async () => {
    const path = newFile()
    const leaseMs = 1500
    const child = spawnChild('hold', path, 'held-key', String(leaseMs))
    const claimed = await nextMessage(child, 'claimed')
    expect(claimed).toMatchObject({ status: 'acquired', attempt: 1 })
    expect(await killed(child)).toBe('SIGKILL')

    // The child's lease ends somewhere in [before + leaseMs, after + leaseMs] on the shared clock.
    const store = new SqliteDedupStore({ path })
    try {
      const seen: { status: string; at: number; attempt?: number; retryAfterMs?: number }[] = []
      const deadline = claimed.after + leaseMs + 3_000
      for (let i = 0; i < 100 && Date.now() < deadline; i++) {
        const result = await store.claim('held-key', LONG)
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
      // The first answer right after the kill is in_flight with at most the lease left.
      expect(seen[0]?.retryAfterMs).toBeGreaterThan(0)
      expect(seen[0]?.retryAfterMs).toBeLessThanOrEqual(leaseMs)
      // No takeover before the lease ended, and one soon after it.
      expect(last?.status).toBe('acquired')
      expect(last?.attempt).toBe(2)
      expect(last?.at).toBeGreaterThanOrEqual(claimed.before + leaseMs)
    } finally {
      await store.close()
    }
  }, 30_000)

  it('remembers every key a process reported completed before it was killed with SIGKILL', async () => {
    const path = newFile()
    const child = spawnChild('complete', path, '5000')
    const reported: string[] = []
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('fewer than 50 completions within 20 s')), 20_000)
      child.on('message', (message: Message) => {
        if (message.type !== 'completed') return
        expect(message.ok).toBe(true)
        reported.push(message.key)
        // Kill as soon as a completion arrives, while the child is busy with the next keys.
        if (reported.length === 50) {
          clearTimeout(timer)
          child.kill('SIGKILL')
          resolve()
        }
      })
    })
    expect(await killed(child)).toBe('SIGKILL')
    // Reports already in the IPC pipe still arrive after the kill: each of them was sent after
    // complete() resolved too, so all are checked.
    expect(reported.length).toBeGreaterThanOrEqual(50)

    // "Restart": a fresh store on the same file, as a new process would open it.
    const store = new SqliteDedupStore({ path })
    try {
      for (const key of reported) expect({ key, status: (await store.claim(key, LONG)).status }).toEqual({ key, status: 'duplicate' })
    } finally {
      await store.close()
    }
  }, 30_000)
})
