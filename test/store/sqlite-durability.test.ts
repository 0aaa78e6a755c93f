import { execFileSync, spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'

// Proves, from the system calls, that a `complete` of the SQLite store with durability 'full'
// resolves only after the WAL file was synced to disk following that complete's commit, and
// that the sync runs off the main thread. strace records every write to and sync of the -wal file.

function hasStrace(): boolean {
  try {
    execFileSync('strace', ['-V'], { stdio: 'ignore' })
    return true
  } catch {
    return false
  }
}
const available = hasStrace()
if (!available && process.env.CI) throw new Error('strace is needed by this test: apt-get install strace (.ci/run installs it).')

const dir = mkdtempSync(join(tmpdir(), 'email-webhooks-durability-'))
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
