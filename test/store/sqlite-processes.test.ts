import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SqliteDedupStore } from '@email-webhooks/core/sqlite'
import { afterAll, describe, expect, it } from 'vitest'
import { scaled } from '../support/time.js'
import { completionsUntilKilled, expectOneWinnerPerKey, expectTakeoverAfterLease, race, raceShares } from './process-cases.js'
import { killed, LONG, nextMessage, storeChildren, withStore } from './process-harness.js'

const dir = mkdtempSync(join(tmpdir(), 'email-webhooks-processes-'))
const LOCK_CHILD = join(import.meta.dirname, 'sqlite-lock-child.mjs')
const forkChild = storeChildren()
let files = 0

afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** Forks store-child.mjs on the SQLite file at `path`: `mode ...args` as described there. */
const spawnChild = (path: string, ...args: string[]) => forkChild('sqlite', path, '', ...args)
const newFile = () => join(dir, `db-${files++}.sqlite`)

describe('SqliteDedupStore shared by several OS processes', () => {
  it('opens a new file while another process is writing it: waits for the lock instead of failing to start', async () => {
    // Turning a file to WAL needs it to itself, and while another process holds a write lock
    // SQLite answers SQLITE_BUSY at once instead of waiting (it could deadlock): 4 processes
    // opening one new file together failed so, once in a fresh clone.
    const path = newFile()
    const holder = spawn(process.execPath, [LOCK_CHILD, path, '300'], { stdio: ['ignore', 'pipe', 'inherit'] })
    try {
      await new Promise<void>((resolve, reject) => {
        holder.stdout.once('data', () => resolve())
        holder.once('exit', (code) => reject(new Error(`the lock holder exited (${code}) before it held the lock`)))
      })
      const store = new SqliteDedupStore({ path })
      await withStore(store, async () => {
        expect((await store.claim('after-the-lock', LONG)).status).toBe('acquired')
      })
    } finally {
      holder.kill()
    }
  })

  it('grants each of 500 event ids to exactly one of 4 racing processes', async () => {
    const path = newFile()
    const count = 500
    // Two pairs of racers: each pair walks the ids in the same shuffled order (head-to-head on
    // every key), the pairs in different orders (crossing each other all along the run).
    const racers = Array.from({ length: 4 }, (_, index) => spawnChild(path, 'race', String(count), String(index % 2)))
    const reports = await race(racers)

    expectOneWinnerPerKey(reports, count)
    const shares = reports.map((report) => report.acquired.length)
    console.log(raceShares(reports))
    // The race was real: more than one process won keys.
    expect(shares.filter((share) => share > 0).length).toBeGreaterThanOrEqual(2)

    // Everything the racers completed is a duplicate for a fifth connection.
    await withStore(new SqliteDedupStore({ path }), async (store) => {
      for (let i = 0; i < count; i++) expect((await store.claim(`race-${i}`, LONG)).status).toBe('duplicate')
    })
  }, 90_000)

  it('keeps a key claimed by a process killed with SIGKILL in flight until its lease ends, then grants attempt 2', async () => {
    const path = newFile()
    // Long enough for the kill and the first look after it (TEST_TIME_SCALE stretches it on a
    // loaded machine); the look polls, so the test lasts about the lease.
    const leaseMs = scaled(1_500)
    // This side's store is open (the file made) and warm before the child's lease starts, so that
    // its first look after the kill comes while the lease is live.
    await withStore(new SqliteDedupStore({ path }), async (store) => {
      expect((await store.claim('warm-up', LONG)).status).toBe('acquired')
      const child = spawnChild(path, 'hold', 'held-key', String(leaseMs))
      const claimed = await nextMessage(child, 'claimed')
      expect(claimed).toMatchObject({ status: 'acquired', attempt: 1 })
      expect(await killed(child)).toBe('SIGKILL')

      // The child's lease ends somewhere in [before + leaseMs, after + leaseMs] on the shared clock.
      await expectTakeoverAfterLease(store, 'held-key', claimed, leaseMs)
    })
  }, 30_000)

  it('remembers every key a process reported completed before it was killed with SIGKILL', async () => {
    const path = newFile()
    const child = spawnChild(path, 'complete', '5000')
    // Kill as soon as a completion arrives, while the child is busy with the next keys.
    const reported = await completionsUntilKilled(child, 50)
    expect(await killed(child)).toBe('SIGKILL')
    // Reports already in the IPC pipe still arrive after the kill: each of them was sent after
    // complete() resolved too, so all are checked.
    expect(reported.length).toBeGreaterThanOrEqual(50)

    // "Restart": a fresh store on the same file, as a new process would open it.
    await withStore(new SqliteDedupStore({ path }), async (store) => {
      for (const key of reported) expect({ key, status: (await store.claim(key, LONG)).status }).toEqual({ key, status: 'duplicate' })
    })
  }, 30_000)
})
