/**
 * The `inbox` commands on a SQLite disk that stopped answering (strace holds every fdatasync of the
 * store's WAL for 60 s): the store's close() gives up after its closeTimeoutMs (10 s), and the stuck
 * sync would keep the process alive forever, process.exit() included. `inbox stats` prints its
 * counts, says why, and ends itself with SIGKILL; `inbox work`, whose handled entry waits for the
 * sync, ends at a second SIGTERM by that signal at once, its summary printed, without waiting for
 * the disk.
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SqliteDedupStore } from '@email-webhooks/core/sqlite'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { straceArgs, straceAvailable } from '../../../test/store/strace.js'
import { type Gathered, gather } from '../../../test/support/output.js'
import { ended } from '../../../test/support/pid.js'
import { scaled, until } from '../../../test/support/time.js'
import { BASE_ENV, BIN, SECRET } from './helpers/cli.js'
import { lines, queueEvents, writeHandlers } from './helpers/inbox.js'

/** The disk holds each sync this long: every process must have ended well before. */
const HELD_MS = 60_000
let dir: string

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cli-stuck-disk-'))
})
afterAll(() => rm(dir, { recursive: true, force: true }))

/** A store file with `count` queued events, closed again (its WAL checkpointed). */
async function storeWith(name: string, count: number): Promise<{ path: string; ids: string[] }> {
  const path = join(dir, name)
  const store = new SqliteDedupStore({ path })
  try {
    return { path, ids: (await queueEvents(store, count)).map((q) => q.id) }
  } finally {
    await store.close()
  }
}

interface Traced extends Gathered {
  child: ChildProcessWithoutNullStreams
  /** The CLI's own process (strace's child). */
  pid: number
}

/** Whether process `pid` runs the CLI: node with the bin (strace forks a helper first, whose command line is strace's). */
function isCli(pid: string): boolean {
  try {
    const [program, script] = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')
    return program === process.execPath && script === BIN
  } catch {
    return false
  }
}

/** Runs the CLI with `args` under strace, every fdatasync of `path`'s WAL held HELD_MS. */
async function cliOnStuckDisk(path: string, args: string[]): Promise<Traced> {
  const inject = `delay_enter=${HELD_MS * 1_000}`
  const child = spawn('strace', straceArgs({ file: `${path}-wal`, syscalls: 'fdatasync', inject }, BIN, ...args), {
    cwd: dir,
    env: { ...BASE_ENV },
  })
  const output = gather(child)
  let pid = 0
  await until(
    () => {
      let children: string[] = []
      try {
        children = readFileSync(`/proc/${child.pid}/task/${child.pid}/children`, 'utf8').trim().split(/\s+/)
      } catch {
        children = []
      }
      pid = Number(children.find(isCli) ?? 0)
      return pid > 0
    },
    'strace starting the CLI',
    10_000,
  )
  return { child, pid, ...output }
}

/** Waits for the CLI to end (a zombie strace has not reaped counts), saying what it printed if it does not. */
async function endOf(run: Traced, what: string, ms: number): Promise<void> {
  await until(() => ended(run.pid), what, ms).catch((error: Error) => {
    throw new Error(`${error.message}; its stderr: ${run.stderr()}`)
  })
}

describe.skipIf(!straceAvailable)('inbox commands on a disk that stopped answering', () => {
  it(
    '`inbox stats` prints its counts, then ends itself with SIGKILL when close() gives up on the disk, instead of hanging',
    async () => {
      const { path } = await storeWith('stats.db', 2)
      const started = performance.now()
      const run = await cliOnStuckDisk(path, ['inbox', 'stats', '--store', path])
      try {
        await endOf(run, 'the CLI ending itself', 40_000)
        // Ended by its own SIGKILL while strace still held the sync.
        expect(performance.now() - started).toBeLessThan(HELD_MS - 5_000)
        // pending (depth), running, dead, lag
        expect(run.stdout()).toMatch(/^pending \(depth\) +running +dead .*\n2 +0 +0 /)
        const stderr = run.stderr()
        expect(stderr).toMatch(
          /email-webhooks: the store \(SQLite file .*stats\.db \(from --store\)\) could not be closed: its disk did not answer a sync in time\. A change this command made may not be on disk/,
        )
        expect(stderr).toContain(
          'Ending this process with SIGKILL (exit status 137), since the stuck sync keeps it from exiting otherwise.',
        )
        expect(stderr).not.toContain(SECRET)
      } finally {
        run.child.kill('SIGKILL')
      }
    },
    scaled(60_000),
  )

  it(
    '`inbox work`: a second SIGTERM while a handled entry waits for the stuck sync ends it at once by that signal, its summary printed',
    async () => {
      const { path, ids } = await storeWith('work.db', 1)
      const log = join(dir, 'work.log')
      await writeHandlers(join(dir, 'work.mjs'), log)
      const run = await cliOnStuckDisk(path, ['inbox', 'work', '--handlers', './work.mjs', '--store', path])
      try {
        // The handler ran; its done record waits for the held sync, so the entry stays running.
        await until(() => lines(log).length === 1, 'the handler running', 20_000)
        expect(lines(log)).toEqual(ids)
        process.kill(run.pid, 'SIGTERM')
        await until(() => run.stderr().includes('SIGTERM: stopping; waiting for 1 running entry'), 'the first SIGTERM answered', 10_000)
        const forced = performance.now()
        process.kill(run.pid, 'SIGTERM')
        await endOf(run, 'the CLI ending at the second SIGTERM', 20_000)
        // At once: not after a close's 10 s, nor after the held sync's 60 s (process.exit() would wait for it).
        expect(performance.now() - forced).toBeLessThan(scaled(8_000))
        expect(run.stderr()).toContain('SIGTERM again: exiting now with 1 entry running')
        expect(run.stdout()).toContain('Stopped (SIGTERM, forced)')
        expect(run.stderr()).not.toContain('could not be closed')
      } finally {
        run.child.kill('SIGKILL')
      }
    },
    scaled(60_000),
  )
})
