import { spawn, spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, realpathSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DedupStoreError } from '@email-webhooks/core'
import { SqliteDedupStore } from '@email-webhooks/core/sqlite'
import { afterAll, describe, expect, it } from 'vitest'
import { gather } from '../support/output.js'
import { ended } from '../support/pid.js'
import { until } from '../support/time.js'
import { straceArgs, straceAvailable, underStrace } from './strace.js'

// Proves, from the system calls, that a `complete` of the SQLite store with durability 'full'
// resolves only after the WAL file was synced to disk following that complete's commit, and
// that the sync runs off the main thread. strace records every write to and sync of the -wal file.
// strace also injects faults: a WAL fdatasync that fails (EIO) or takes 400 ms, to check what
// the store answers meanwhile and afterwards.

const available = straceAvailable

const dir = realpathSync(mkdtempSync(join(tmpdir(), 'email-webhooks-durability-')))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const child = join(import.meta.dirname, 'sqlite-durability-child.mjs')
const EVENTS = 20

interface Step {
  key: string
  walWritesBeforeSync: number
  syncedAfterLastWrite: boolean
  syncThreads: Set<number>
}

/** Runs the child under strace; for each event, what happened to the WAL between "claimed" and "completed". */
function trace(durability: 'full' | 'normal'): { steps: Step[]; mainPid: number } {
  const log = join(dir, `${durability}.trace`)
  const result = spawnSync(
    'strace',
    [
      '-f',
      '-qq',
      '-e',
      'trace=openat,pwrite64,write,fdatasync,fsync',
      '-o',
      log,
      process.execPath,
      child,
      join(dir, `${durability}.db`),
      durability,
      String(EVENTS),
    ],
    { encoding: 'utf8', timeout: 60_000 },
  )
  expect(result.status, result.stderr).toBe(0)
  const lines = readFileSync(log, 'utf8').split('\n')
  const mainPid = Number(lines[0]?.split(/\s+/)[0])
  const walFds = new Set<string>()
  const pendingSync = new Map<string, string>() // tid → fd of an unfinished sync
  const steps: Step[] = []
  let current: Step | undefined
  for (const line of lines) {
    const match = /^(\d+)\s+(.*)$/.exec(line)
    if (!match) continue
    const tid = match[1] as string
    const call = match[2] as string
    const opened = /^openat\(.*-wal", [^)]*\) = (\d+)$/.exec(call)
    if (opened) walFds.add(opened[1] as string)
    const printed = /^write\(1, "(claimed|completed) ([^\\"]+)/.exec(call)
    if (printed) {
      if (printed[1] === 'claimed')
        current = { key: printed[2] as string, walWritesBeforeSync: 0, syncedAfterLastWrite: false, syncThreads: new Set() }
      else if (current) {
        steps.push(current)
        current = undefined
      }
      continue
    }
    if (!current) continue
    const written = /^pwrite64\((\d+),/.exec(call)
    if (written && walFds.has(written[1] as string)) {
      current.walWritesBeforeSync++
      current.syncedAfterLastWrite = false
    }
    let syncedFd: string | undefined
    const whole = /^f(?:data)?sync\((\d+)\)\s+= 0$/.exec(call)
    if (whole) syncedFd = whole[1]
    const started = /^f(?:data)?sync\((\d+) <unfinished \.\.\.>$/.exec(call)
    if (started) pendingSync.set(tid, started[1] as string)
    if (/^<\.\.\. f(?:data)?sync resumed>\)\s+= 0$/.test(call)) syncedFd = pendingSync.get(tid)
    if (syncedFd !== undefined && walFds.has(syncedFd)) {
      current.syncedAfterLastWrite = true
      current.syncThreads.add(Number(tid))
    }
  }
  return { steps, mainPid }
}

describe.skipIf(!available)('SqliteDedupStore durability, seen in system calls', () => {
  it("'full': every complete resolves after a WAL sync that follows its commit, run on a thread other than the main one", () => {
    const { steps, mainPid } = trace('full')
    expect(steps).toHaveLength(EVENTS)
    for (const step of steps) {
      expect(step.walWritesBeforeSync, step.key).toBeGreaterThan(0)
      expect(step.syncedAfterLastWrite, step.key).toBe(true)
      expect(
        [...step.syncThreads].some((tid) => tid !== mainPid),
        step.key,
      ).toBe(true)
    }
  })

  it("'normal': completes resolve without any WAL sync (the check above can tell the difference)", () => {
    const { steps } = trace('normal')
    expect(steps).toHaveLength(EVENTS)
    for (const step of steps) expect(step.syncedAfterLastWrite, step.key).toBe(false)
  })
})

const syncChild = join(import.meta.dirname, 'sqlite-sync-child.mjs')

type Settled = { step: string; value?: unknown; error?: { name: string; code: string; message: string } }

/** Runs sqlite-sync-child.mjs in `mode` with every fdatasync of the WAL tampered with by `inject`; what settled, in order. */
function underFault(
  mode: 'fail' | 'delay' | 'inbox-delay' | 'late-close' | 'idle-late-close',
  inject: string,
  name: string = mode,
): { path: string; settled: Settled[] } {
  const path = join(dir, `${name}.db`)
  const result = underStrace({ file: `${path}-wal`, syscalls: 'fdatasync', inject }, syncChild, path, mode)
  expect(result.status, result.stderr).toBe(0)
  return { path, settled: JSON.parse(result.stdout) as Settled[] }
}

describe.skipIf(!available)('SqliteDedupStore when the WAL sync fails or is slow (faults injected by strace)', () => {
  it('rejects the complete with a DedupStoreError after a failed fdatasync, then refuses all work until reopened', async () => {
    const { path, settled } = underFault('fail', 'error=EIO')
    expect(settled.map((entry) => entry.step)).toEqual(['complete', 'claim', 'complete again', 'release', 'lookup'])
    for (const entry of settled) {
      expect(entry.value, entry.step).toBeUndefined()
      expect(entry.error, entry.step).toMatchObject({ name: 'DedupStoreError', code: 'command_failed' })
      expect(entry.error?.message, entry.step).toMatch(
        /could not be synced to disk \(fdatasync: EIO\).*refuses all further work until it is reopened/,
      )
      expect(entry.error?.message, entry.step).toContain(path)
    }
    // Reopened without the fault, the file works again.
    const store = new SqliteDedupStore({ path })
    try {
      const claimed = await store.claim('event-3', { leaseMs: 60_000, retentionMs: 3_600_000 })
      expect(claimed.status).toBe('acquired')
      if (claimed.status === 'acquired') expect(await store.complete(claimed.claim, { retentionMs: 3_600_000 })).toBe(true)
      expect(await store.lookup('event-3')).toBe('done')
    } finally {
      await store.close()
    }
  })

  it('answers a duplicate (and lookup "done") only after the sync that makes the completed record durable has ended', () => {
    const { settled } = underFault('delay', 'delay_exit=400000')
    // The second claim and the lookup read the committed record while its sync was still running.
    expect(settled.map((entry) => entry.step)).toEqual(['complete', 'lookup', 'claim again'])
    expect(settled.map((entry) => entry.value)).toEqual([true, 'done', { status: 'duplicate' }])
  })

  /** Runs sqlite-sync-child.mjs in `mode` with every WAL fdatasync held 60 s; what settled, once the child ended at its own SIGKILL. */
  async function underStuckSync(mode: 'stuck-close' | 'idle-close'): Promise<{ path: string; steps: Map<string, Settled> }> {
    const path = join(dir, `${mode}.db`)
    const started = performance.now()
    const args = straceArgs({ file: `${path}-wal`, syscalls: 'fdatasync', inject: 'delay_enter=60000000' }, syncChild, path, mode)
    const tracer = spawn('strace', args)
    const output = gather(tracer)
    try {
      await until(() => output.stdout().endsWith('\n'), 'the child printing what settled', 20_000).catch((error: Error) => {
        throw new Error(`${error.message}; its stderr: ${output.stderr().slice(0, 1_000)}`)
      })
      const steps = new Map((JSON.parse(output.stdout()) as Settled[]).map((entry) => [entry.step, entry]))
      // The child ends at its own SIGKILL while its sync is still held (strace holds it 60 s).
      await until(() => ended(steps.get('pid')?.value as number), 'the child ending at its SIGKILL', 5_000)
      expect(performance.now() - started).toBeLessThan(55_000)
      return { path, steps }
    } finally {
      tracer.kill('SIGKILL')
    }
  }

  it('close() gives up on a sync that does not end within closeTimeoutMs: timeout for it and for what waited, and the file recovers', async () => {
    // close() waits 300 ms (closeTimeoutMs) for the complete's held sync, then rejects; the child
    // then ends itself with SIGKILL as the error says (process.exit() would wait for the sync).
    const { path, steps } = await underStuckSync('stuck-close')
    expect([...steps.keys()].sort()).toEqual(['claim after close', 'close', 'close again', 'close took', 'complete', 'pid'])
    const timedOut = { name: 'DedupStoreError', code: 'timeout' }
    expect(steps.get('close')?.error).toMatchObject(timedOut)
    expect(steps.get('close')?.error?.message).toMatch(/close\(\) of the store on .* waited 300 ms \(closeTimeoutMs\).*SIGKILL/)
    // What waited for the sync is not acknowledged; a second close() answers as the first.
    expect(steps.get('complete')?.error).toMatchObject(timedOut)
    expect(steps.get('close again')?.error).toMatchObject(timedOut)
    expect(steps.get('claim after close')?.error).toMatchObject({ code: 'closed' })
    const took = steps.get('close took')?.value as number
    expect(took).toBeGreaterThanOrEqual(290)
    expect(took).toBeLessThan(10_000)
    // No checkpoint ran: the commit is still in the WAL, and the file opens as after a crash.
    expect(statSync(`${path}-wal`).size).toBeGreaterThan(0)
    const store = new SqliteDedupStore({ path })
    try {
      expect(await store.lookup('event-1')).toBe('done')
      const again = await store.claim('event-3', { leaseMs: 60_000, retentionMs: 3_600_000 })
      expect(again.status).toBe('acquired')
    } finally {
      await store.close()
    }
  })

  it('close() of an idle store on a disk that stopped answering rejects with timeout before its checkpoint, instead of hanging on it', async () => {
    // durability 'normal': nothing was syncing when close() began; its own sync before the
    // checkpoint (which would otherwise sync on the event loop, with no limit) meets the held disk.
    const { steps } = await underStuckSync('idle-close')
    expect(steps.get('complete')?.value).toBe(true)
    expect(steps.get('close')?.error).toMatchObject({ name: 'DedupStoreError', code: 'timeout' })
    expect(steps.get('close again')?.error).toMatchObject({ code: 'timeout' })
    const took = steps.get('close took')?.value as number
    expect(took).toBeGreaterThanOrEqual(290)
    expect(took).toBeLessThan(10_000)
  })

  it.each([
    [
      'a slow disk: the held sync ends without an error',
      'late-close',
      'delay_enter=1500000',
      /without an error: the disk was slow, not failed.*raise closeTimeoutMs above \d/,
    ],
    [
      'a failing disk: the held sync ends with EIO',
      'late-close',
      'error=EIO:delay_enter=1500000',
      /with an error \(fdatasync: EIO\): the disk failed it/,
    ],
    [
      "an idle store: close()'s own sync ends with EIO",
      'idle-late-close',
      'error=EIO:delay_enter=1500000',
      /with an error \(fdatasync: EIO\)/,
    ],
  ] as const)(
    'after close() gave up, warns once the disk answers, late, saying how long it took and whether it failed (%s)',
    (_, mode, inject, said) => {
      const { path, settled } = underFault(mode, inject, `${mode}-${inject.startsWith('error') ? 'eio' : 'slow'}`)
      const steps = new Map(settled.map((entry) => [entry.step, entry]))
      expect(steps.get('close')?.error).toMatchObject({ name: 'DedupStoreError', code: 'timeout' })
      const warnings = settled.filter((entry) => entry.step === 'warning').map((entry) => String(entry.value))
      expect(warnings).toHaveLength(1)
      const warning = warnings.join('\n')
      expect(warning).toMatch(said)
      expect(warning).toContain(`the sync of ${realpathSync(path)} that close() gave up on after 300 ms (closeTimeoutMs)`)
      // strace holds the sync 1.5 s from close()'s start at the latest: the warning says about that, never less than the limit.
      const took = Number(/, ([\d.]+) s after close\(\) began waiting/.exec(warning)?.[1])
      expect(took).toBeGreaterThanOrEqual(0.3)
      expect(took).toBeLessThan(30)
    },
  )

  it('answers a second enqueue of an inbox entry "duplicate" only after the sync that makes the first one durable has ended', () => {
    const { settled } = underFault('inbox-delay', 'delay_exit=400000')
    // The second enqueue found the committed entry while its sync was still running: it waits for it too.
    expect(settled).toEqual([
      { step: 'enqueue', value: 'queued' },
      { step: 'enqueue again', value: 'duplicate' },
    ])
  })
})

describe('DedupStoreError across entry points', () => {
  it('is the same class in @email-webhooks/core and in the errors of @email-webhooks/core/sqlite', async () => {
    const store = new SqliteDedupStore({ path: join(dir, 'closed.db') })
    await store.close()
    const error = await store.claim('x', { leaseMs: 1_000, retentionMs: 1_000 }).catch((caught: unknown) => caught)
    expect(error).toBeInstanceOf(DedupStoreError)
    expect(error).toMatchObject({ code: 'closed' })
  })
})
