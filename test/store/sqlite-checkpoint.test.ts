// The SQLite store's WAL checkpoint in a worker thread (issue 48; checkpoint.ts). The hold protocol
// is driven through a stand-in driver in the worker (fixtures/slow-checkpoint-driver.cjs: each
// checkpoint answers a WAL of a given size after a given time), so that a slow or failing
// checkpoint is a setting, not a race; then a real store on a real file shows that its WAL
// restarts through the worker while its own checkpoint stays a backstop. No speed is asserted.
import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import os, { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SqliteDedupStore } from '@email-webhooks/core/sqlite'
import { afterAll, describe, expect, it } from 'vitest'
import { Checkpointer } from '../../packages/core/src/store/sqlite/checkpoint.js'

const dir = mkdtempSync(join(tmpdir(), 'email-webhooks-checkpoint-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const FAKE_DRIVER = join(import.meta.dirname, 'fixtures', 'slow-checkpoint-driver.cjs')
/** Pages past the restart size at 1 KiB pages (4 MiB). */
const BIG_LOG = 10_000
const PAGE_SIZE = 1_024

interface Settings {
  log: number
  firstPassMs: number
  passMs: number
  failAt?: number
  failFrom?: number
}

/** Wide bounds, so that a test of the answer path does not race the timers on a busy machine. */
const WIDE = { holdMaxMs: 5_000, askMaxMs: 5_000 }

/** A checkpointer on the stand-in driver; records what it asked of its store. */
function fakeCheckpointer(
  name: string,
  settings: Settings,
  {
    driver = FAKE_DRIVER,
    parallel = true,
    timings,
  }: { driver?: string; parallel?: boolean; timings?: { holdMaxMs?: number; askMaxMs?: number } } = {},
) {
  let asked = 0
  const path = join(dir, name)
  writeFileSync(`${path}.json`, JSON.stringify(settings))
  const autocheckpoints: number[] = []
  const stops: string[] = []
  let resumes = 0
  const checkpointer = new Checkpointer({
    path,
    driver: () => driver,
    pageSize: PAGE_SIZE,
    autocheckpoint: (pages) => autocheckpoints.push(pages),
    resume: () => {
      resumes++
    },
    stopped: (reason) => stops.push(reason),
    timings,
    parallel: () => {
      asked++
      return parallel
    },
  })
  return { checkpointer, autocheckpoints, stops, resumes: () => resumes, asked: () => asked }
}

/** Polls `ready` every millisecond for at most 5 s. */
async function until(ready: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 5_000
  while (!ready()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 1))
  }
}

describe('Checkpointer (stand-in driver)', () => {
  it('starts only after 1,000 writes, and then sets the writing connection’s own checkpoint to 3× the restart size', async () => {
    const { checkpointer, autocheckpoints } = fakeCheckpointer('start.db', { log: 10, firstPassMs: 0, passMs: 0 })
    try {
      checkpointer.committed(999)
      expect(checkpointer.running).toBe(false)
      checkpointer.committed(1)
      expect(checkpointer.running).toBe(true)
      expect(autocheckpoints).toEqual([3 * 4_096])
      await until(() => checkpointer.counts.passes === 1, 'the first pass')
      // A WAL under the restart size: no hold asked for.
      expect(checkpointer.mayCommit()).toBe(true)
      expect(checkpointer.counts.holds).toBe(0)
    } finally {
      await checkpointer.stop()
    }
  })

  it('on a single core (asked once, at the 1,000th write), starts only once the inbox writes (request mode keeps the checkpoint in the committing call)', async () => {
    const { checkpointer, autocheckpoints, asked } = fakeCheckpointer(
      'single.db',
      { log: 10, firstPassMs: 0, passMs: 0 },
      { parallel: false },
    )
    try {
      // Asked when the thread would start (a process may be pinned to one core after it started), once.
      checkpointer.committed(999)
      expect(asked()).toBe(0)
      checkpointer.committed(4_001)
      checkpointer.committed(10)
      expect(asked()).toBe(1)
      expect(checkpointer.running).toBe(false)
      expect(autocheckpoints).toEqual([])
      checkpointer.committed(1, true)
      expect(checkpointer.running).toBe(true)
      expect(autocheckpoints).toEqual([3 * 4_096])
    } finally {
      await checkpointer.stop()
    }
  })

  it('past the restart size, asks for a hold: the next batch waits, and may go once the worker copied the rest', async () => {
    const { checkpointer, resumes } = fakeCheckpointer('hold.db', { log: BIG_LOG, firstPassMs: 0, passMs: 5 }, { timings: WIDE })
    try {
      checkpointer.committed(1_000)
      // The store asks before each batch; the first ask after the worker's pass agrees to the hold.
      await until(() => !checkpointer.mayCommit(), 'a hold')
      expect(checkpointer.holding).toBe(true)
      expect(checkpointer.counts.holds).toBe(1)
      expect(checkpointer.mayCommit()).toBe(false)
      await until(() => resumes() === 1, 'the resume')
      expect(checkpointer.holding).toBe(false)
      expect(checkpointer.mayCommit()).toBe(true)
      expect(checkpointer.counts).toMatchObject({ passes: 1, holds: 1, holdsTimedOut: 0, failures: 0 })
    } finally {
      await checkpointer.stop()
    }
  })

  it('a held pass slower than 20 ms (a slow disk): the batch commits anyway, and the late pass resumes nothing twice', async () => {
    const { checkpointer, resumes } = fakeCheckpointer(
      'slow.db',
      { log: BIG_LOG, firstPassMs: 0, passMs: 300 },
      { timings: { holdMaxMs: 20, askMaxMs: 5_000 } },
    )
    try {
      checkpointer.committed(1_000)
      await until(() => !checkpointer.mayCommit(), 'a hold')
      await new Promise((resolve) => setTimeout(resolve, 30))
      expect(checkpointer.mayCommit()).toBe(true)
      expect(checkpointer.counts.holdsTimedOut).toBe(1)
      expect(checkpointer.holding).toBe(false)
      // The timer resumed the store once; the pass's own answer comes later and changes nothing.
      expect(resumes()).toBe(1)
      await until(() => checkpointer.counts.passes === 1, 'the slow pass')
      expect(checkpointer.mayCommit()).toBe(true)
    } finally {
      await checkpointer.stop()
    }
  })

  it('a store that commits nothing while asked: the worker withdraws its ask, and no batch is held later', async () => {
    const { checkpointer } = fakeCheckpointer('withdrawn.db', { log: BIG_LOG, firstPassMs: 0, passMs: 0 })
    try {
      checkpointer.committed(1_000)
      await until(() => checkpointer.counts.passes === 1, 'the pass')
      expect(checkpointer.mayCommit()).toBe(true)
      expect(checkpointer.counts.holds).toBe(0)
    } finally {
      await checkpointer.stop()
    }
  })

  it('stop() during a hold frees the batch at once and resolves when the thread is gone', async () => {
    const { checkpointer, resumes } = fakeCheckpointer('stop.db', { log: BIG_LOG, firstPassMs: 0, passMs: 200 }, { timings: WIDE })
    checkpointer.committed(1_000)
    await until(() => !checkpointer.mayCommit(), 'a hold')
    const stopped = checkpointer.stop()
    expect(checkpointer.holding).toBe(false)
    expect(resumes()).toBe(1)
    expect(checkpointer.mayCommit()).toBe(true)
    await stopped
    expect(checkpointer.running).toBe(false)
  })

  it('stop() before a running pass asks for a hold: the store commits its last batch all the same', async () => {
    // The pass takes 100 ms and then asks, and waits up to 1 s for an agreement that must not come.
    const { checkpointer } = fakeCheckpointer(
      'stop-first.db',
      { log: BIG_LOG, firstPassMs: 100, passMs: 0 },
      { timings: { holdMaxMs: 5_000, askMaxMs: 1_000 } },
    )
    checkpointer.committed(1_000)
    const stopped = checkpointer.stop()
    // Asked before each batch, as a closing store's last flush would: never held.
    const held: boolean[] = []
    const end = Date.now() + 700
    while (Date.now() < end) {
      held.push(!checkpointer.mayCommit())
      await new Promise((resolve) => setTimeout(resolve, 1))
    }
    expect(held.some(Boolean)).toBe(false)
    expect(checkpointer.holding).toBe(false)
    expect(checkpointer.counts.holds).toBe(0)
    await stopped
    expect(checkpointer.counts.passes).toBe(1)
  })

  it('three failed passes in a row stop the thread and give the checkpoint back to the writing connection', async () => {
    const { checkpointer, autocheckpoints, stops } = fakeCheckpointer('failing.db', { log: 10, firstPassMs: 0, passMs: 0, failFrom: 1 })
    checkpointer.committed(1_000)
    // While no rate is known a pass comes at most every 50 ms; each commit asks for one when due.
    await until(() => {
      checkpointer.committed(1)
      return !checkpointer.running
    }, 'three failures')
    expect(checkpointer.counts.failures).toBeGreaterThanOrEqual(3)
    expect(autocheckpoints).toEqual([3 * 4_096, 4_096])
    expect(checkpointer.mayCommit()).toBe(true)
    // Said once, with the cause.
    expect(stops).toEqual(['3 checkpoints in a row failed: SQLITE_IOERR'])
    await checkpointer.stop()
  })

  it('a failing checkpoint is counted and the next pass runs; a worker that cannot start gives the checkpoint back to the writing connection', async () => {
    const failing = fakeCheckpointer('fail.db', { log: 10, firstPassMs: 0, passMs: 0, failAt: 1 })
    try {
      failing.checkpointer.committed(1_000)
      await until(() => failing.checkpointer.counts.passes === 1, 'the failed pass')
      expect(failing.checkpointer.counts.failures).toBe(1)
      await new Promise((resolve) => setTimeout(resolve, 60))
      failing.checkpointer.committed(1)
      await until(() => failing.checkpointer.counts.passes === 2, 'the next pass')
      expect(failing.checkpointer.counts.failures).toBe(1)
      expect(failing.checkpointer.running).toBe(true)
    } finally {
      await failing.checkpointer.stop()
    }

    const broken = fakeCheckpointer('broken.db', { log: 10, firstPassMs: 0, passMs: 0 }, { driver: join(dir, 'no-such-driver.cjs') })
    broken.checkpointer.committed(1_000)
    await until(() => !broken.checkpointer.running, 'the worker to fail')
    expect(broken.autocheckpoints).toEqual([3 * 4_096, 4_096])
    expect(broken.checkpointer.counts.failures).toBe(1)
    expect(broken.checkpointer.mayCommit()).toBe(true)
    expect(broken.stops).toHaveLength(1)
    expect(broken.stops[0]).toMatch(/^the thread failed: MODULE_NOT_FOUND/)
    expect(failing.stops).toEqual([])
    await broken.checkpointer.stop()
  })
})

// better-sqlite3 as the store loads it, to see which wal_autocheckpoint the store sets.
type Pragma = (source: string, options?: unknown) => unknown
const Database = createRequire(import.meta.url)('better-sqlite3') as { prototype: { pragma: Pragma } }

/**
 * Frames in the WAL now: `mxFrame` of the wal-index header at the start of the -shm file (native
 * byte order; sqlite.org/walformat.html).
 */
function walFrames(path: string): number {
  const header = readFileSync(`${path}-shm`).subarray(0, 48)
  return os.endianness() === 'LE' ? header.readUInt32LE(16) : header.readUInt32BE(16)
}

/** The checkpoint sequence number in the WAL header: SQLite adds one each time the WAL starts over. */
function walRestarts(path: string): number {
  return existsSync(`${path}-wal`) && statSync(`${path}-wal`).size >= 32 ? readFileSync(`${path}-wal`).readUInt32BE(12) : 0
}

describe('SqliteDedupStore with its checkpointer', () => {
  it('a busy store’s WAL starts over before the writing connection’s own checkpoint (now at 12 MiB) would', async () => {
    const path = join(dir, 'busy.db')
    const set: string[] = []
    const pragma = Database.prototype.pragma
    Database.prototype.pragma = function (this: unknown, source: string, options?: unknown) {
      if (source.startsWith('wal_autocheckpoint')) set.push(source)
      return pragma.call(this, source, options)
    }
    const store = new SqliteDedupStore({ path, durability: 'normal' })
    const LONG = { leaseMs: 60_000, retentionMs: 3_600_000 }
    // One inbox entry: on a single core the worker starts only once the inbox writes.
    await store.inbox?.enqueue({ key: 'inbox-1', type: 'email.bounced', payload: '{}', timestamp: 1_700_000_000 }, LONG)
    // Runs until the WAL starts over with fewer than 11,000 frames, or has started over 3 times
    // (at most 300,000 events), sampling the frames it holds every 100 events. The backstop alone
    // restarts it at 12,288 frames; the worker at about 4,096, though on a loaded machine a hold
    // may time out and leave a round to the backstop.
    const MAX_EVENTS = 300_000
    const EARLY = 11_000
    let restartsAtStart: number | undefined
    let seen = 0
    /** The most frames sampled before each restart. */
    const before: number[] = []
    let mostFrames = 0
    let events = 0
    const done = () => before.some((frames) => frames < EARLY) || before.length >= 3
    try {
      const lane = async () => {
        while (!done() && events < MAX_EVENTS) {
          const i = events++
          const result = await store.claim(`busy-${i}`, LONG)
          if (result.status !== 'acquired') throw new Error(`busy-${i} was ${result.status}`)
          if (!(await store.complete(result.claim, LONG))) throw new Error(`busy-${i} did not complete`)
          if (i < 1_000 || i % 100 !== 99) continue
          // From the first sample after the worker started (the 1,000th write).
          restartsAtStart ??= walRestarts(path)
          const restarts = walRestarts(path) - restartsAtStart
          if (restarts > seen) {
            seen = restarts
            before.push(mostFrames)
            mostFrames = 0
          }
          mostFrames = Math.max(mostFrames, walFrames(path))
        }
      }
      await Promise.all(Array.from({ length: 20 }, lane))
    } finally {
      await store.close()
      Database.prototype.pragma = pragma
    }
    console.log(`${events} events; the WAL started over after at most ${before.join(', ')} frames`)
    // Opened at 4 MiB (4,096 pages of 1 KiB), raised to 12 MiB once the worker ran.
    expect(set).toEqual(['wal_autocheckpoint = 4096', 'wal_autocheckpoint = 12288'])
    expect(before.length).toBeGreaterThan(0)
    expect(before.every((frames) => frames > 0)).toBe(true)
    expect(Math.min(...before)).toBeLessThan(EARLY)
    const db = new (Database as unknown as new (path: string) => { prepare(s: string): { get(): unknown }; close(): void })(path)
    try {
      expect(db.prepare('SELECT count(*) AS n FROM email_webhook_dedup').get()).toEqual({ n: events })
      expect(db.prepare('SELECT count(*) AS n FROM email_webhook_dedup_inbox').get()).toEqual({ n: 1 })
    } finally {
      db.close()
    }
  }, 60_000)

  it('close() in a script with nothing else to do: the process lives until the thread closed its connection', () => {
    const path = join(dir, 'script.db')
    const child = spawnSync(process.execPath, [join(import.meta.dirname, 'sqlite-checkpoint-child.mjs'), path, '1500'], {
      encoding: 'utf8',
      timeout: 30_000,
    })
    expect(child.stderr).toBe('')
    expect(child.status).toBe(0)
    expect(JSON.parse(child.stdout)).toEqual({ rows: 1_500 })
  }, 40_000)
})
