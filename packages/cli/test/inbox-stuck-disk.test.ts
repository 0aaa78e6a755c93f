/**
 * The `inbox` commands on a SQLite disk that stopped answering (strace holds every fdatasync of the
 * store's WAL for 60 s): the store's close() gives up after its closeTimeoutMs (10 s), and the stuck
 * sync would keep the process alive forever, process.exit() included. The command says why and
 * ends itself with SIGKILL, long before the disk answers: `inbox stats` at its close, and
 * `inbox work` at a second SIGTERM while its handled entry waits for the sync.
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SqliteDedupStore } from '@email-webhooks/core/sqlite'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { straceArgs, straceAvailable } from '../../../test/store/strace.js'
import { ended } from '../../../test/support/pid.js'
import { until } from '../../../test/support/time.js'
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

interface Traced {
  child: ChildProcessWithoutNullStreams
  /** The CLI's own process (strace's child). */
  pid: number
  stdout(): string
  stderr(): string
}

/** Runs the CLI with `args` under strace, every fdatasync of `path`'s WAL held HELD_MS. */
async function cliOnStuckDisk(path: string, args: string[]): Promise<Traced> {
  const inject = `delay_enter=${HELD_MS * 1_000}`
  const child = spawn('strace', straceArgs({ file: `${path}-wal`, syscalls: 'fdatasync', inject }, BIN, ...args), {
    cwd: dir,
    env: { ...BASE_ENV },
  })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString()
  })
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString()
  })
  let pid = 0
  await until(
    () => {
      try {
        pid = Number(readFileSync(`/proc/${child.pid}/task/${child.pid}/children`, 'utf8').trim().split(/\s+/)[0])
      } catch {
        pid = 0
      }
      return pid > 0
    },
    'strace starting the CLI',
    10_000,
  )
  return { child, pid, stdout: () => stdout, stderr: () => stderr }
}

/** What a command says before it ends itself, after close() waited closeTimeoutMs (10 s) for the disk. */
function expectSigkillLines(stderr: string, path: string): void {
  expect(stderr).toMatch(
    new RegExp(
      `email-webhooks: the store \\(SQLite file .*${path.split('/').pop()} \\(from --store\\)\\) could not be closed: close\\(\\) of the store on .* waited 10000 ms \\(closeTimeoutMs\\) for the disk`,
    ),
  )
  expect(stderr).toContain(
    'email-webhooks: ending this process with SIGKILL (exit status 137), since the stuck sync keeps it from exiting otherwise.',
  )
  expect(stderr).not.toContain(SECRET)
}

describe.skipIf(!straceAvailable)('inbox commands on a disk that stopped answering', () => {
  it('`inbox stats` prints its counts, then ends itself with SIGKILL when close() gives up on the disk, instead of hanging', async () => {
    const { path } = await storeWith('stats.db', 2)
    const started = performance.now()
    const run = await cliOnStuckDisk(path, ['inbox', 'stats', '--store', path])
    try {
      await until(() => ended(run.pid), 'the CLI ending itself', 40_000).catch((error: Error) => {
        throw new Error(`${error.message}; its stderr: ${run.stderr()}`)
      })
      expect(performance.now() - started).toBeLessThan(HELD_MS - 10_000)
      // pending (depth), running, dead, lag
      expect(run.stdout()).toMatch(/^pending \(depth\) +running +dead .*\n2 +0 +0 /)
      expectSigkillLines(run.stderr(), path)
    } finally {
      run.child.kill('SIGKILL')
    }
  }, 60_000)

  it('`inbox work`: a second SIGTERM while a handled entry waits for the stuck sync closes the store, then ends with SIGKILL', async () => {
    const { path, ids } = await storeWith('work.db', 1)
    const log = join(dir, 'work.log')
    await writeHandlers(join(dir, 'work.mjs'), log)
    const started = performance.now()
    const run = await cliOnStuckDisk(path, ['inbox', 'work', '--handlers', './work.mjs', '--store', path])
    try {
      // The handler ran; its done record waits for the held sync, so the entry stays running.
      await until(() => lines(log).length === 1, 'the handler running', 20_000)
      expect(lines(log)).toEqual(ids)
      process.kill(run.pid, 'SIGTERM')
      await until(() => run.stderr().includes('SIGTERM: stopping; waiting for 1 running entry'), 'the first SIGTERM answered', 10_000)
      process.kill(run.pid, 'SIGTERM')
      await until(() => ended(run.pid), 'the CLI ending itself', 40_000).catch((error: Error) => {
        throw new Error(`${error.message}; its stderr: ${run.stderr()}`)
      })
      expect(performance.now() - started).toBeLessThan(HELD_MS - 10_000)
      expect(run.stderr()).toContain('SIGTERM again: exiting now with 1 entry running')
      expect(run.stdout()).toContain('Stopped (SIGTERM, forced)')
      expectSigkillLines(run.stderr(), path)
    } finally {
      run.child.kill('SIGKILL')
    }
  }, 60_000)
})
