/**
 * PostgresDedupStore and RedisDedupStore shared by several OS processes, against real servers:
 * the same race and SIGKILL cases as sqlite-processes.test.ts, and a crash of the server itself.
 */
import { type ClaimResult, type DedupStore, DedupStoreError } from '@email-webhooks/core'
import { PostgresDedupStore } from '@email-webhooks/core/postgres'
import { RedisDedupStore } from '@email-webhooks/core/redis'
import { describe, expect, it } from 'vitest'
import type { RunningServer } from '../services/servers.js'
import { scaled } from '../support/time.js'
import { completionsUntilKilled, expectOneWinnerPerKey, expectTakeoverAfterLease, race, raceShares } from './process-cases.js'
import { killed, LONG, nextMessage, type ServerKind, sleep, storeChildren, useServers, withStore } from './process-harness.js'

const servers = useServers()
const forkChild = storeChildren()

const urlOf = (kind: ServerKind) => (servers[kind] as RunningServer).url
const openStore = (kind: ServerKind): DedupStore =>
  kind === 'postgres' ? new PostgresDedupStore({ connectionString: urlOf(kind) }) : new RedisDedupStore({ url: urlOf(kind) })
/** Forks store-child.mjs on the `kind` server with its keys under `prefix`: `mode ...args` as described there. */
const spawnChild = (kind: ServerKind, prefix: string, ...args: string[]) => forkChild(kind, urlOf(kind), prefix, ...args)
const newPrefix = () => `${crypto.randomUUID()}:`

describe.each(['postgres', 'redis'] as const)('%s store shared by several OS processes', (kind) => {
  it('grants each of 500 event ids to exactly one of 4 racing processes', async () => {
    const prefix = newPrefix()
    const count = 500
    // Two pairs of racers: each pair walks the ids in the same shuffled order (head-to-head on
    // every key), the pairs in different orders (crossing each other all along the run).
    const racers = Array.from({ length: 4 }, (_, index) => spawnChild(kind, prefix, 'race', String(count), String(index % 2)))
    const reports = await race(racers)

    expectOneWinnerPerKey(reports, count)
    console.log(`${kind}: ${raceShares(reports)}`)
    // The race was real: more than one process won keys.
    expect(reports.filter((report) => report.acquired.length > 0).length).toBeGreaterThanOrEqual(2)

    // Everything the racers completed is a duplicate for a fifth connection.
    await withStore(openStore(kind), async (store) => {
      for (let i = 0; i < count; i++) expect((await store.claim(`${prefix}race-${i}`, LONG)).status).toBe('duplicate')
    })
  }, 90_000)

  it('keeps a key claimed by a process killed with SIGKILL in flight until its lease ends, then grants attempt 2', async () => {
    const prefix = newPrefix()
    // Long enough for the kill and the first look after it (TEST_TIME_SCALE stretches it on a
    // loaded machine); the look polls, so the test lasts about the lease.
    const leaseMs = scaled(1_500)
    // This side's store is connected (and its table made) before the child's lease starts, so that
    // its first look after the kill comes while the lease is live.
    await withStore(openStore(kind), async (store) => {
      expect((await store.claim(`${prefix}warm-up`, LONG)).status).toBe('acquired')
      const child = spawnChild(kind, prefix, 'hold', 'held-key', String(leaseMs))
      const claimed = await nextMessage(child, 'claimed')
      expect(claimed).toMatchObject({ status: 'acquired', attempt: 1 })
      expect(await killed(child)).toBe('SIGKILL')

      // The lease is on the server's clock; on this machine it ends in [before + leaseMs, after + leaseMs].
      await expectTakeoverAfterLease(store, `${prefix}held-key`, claimed, leaseMs)
    })
  }, 30_000)

  it('remembers every key a process reported completed before it was killed with SIGKILL', async () => {
    const prefix = newPrefix()
    const child = spawnChild(kind, prefix, 'complete', '5000')
    const reported = await completionsUntilKilled(child, 50)
    expect(await killed(child)).toBe('SIGKILL')
    // Reports already in the IPC pipe still arrive after the kill (seen on Node 22 with Redis):
    // each was sent after complete() resolved too, so all are checked, as in the SQLite twin.
    expect(reported.length).toBeGreaterThanOrEqual(50)

    await withStore(openStore(kind), async (store) => {
      for (const key of reported) expect({ key, status: (await store.claim(key, LONG)).status }).toEqual({ key, status: 'duplicate' })
    })
  }, 30_000)

  it('keeps every acknowledged completion through a hard crash and restart of the server, and the same store reconnects', async () => {
    const prefix = newPrefix()
    const server = servers[kind] as RunningServer
    const keys = Array.from({ length: 200 }, (_, i) => `${prefix}server-crash-${i}`)
    await withStore(openStore(kind), async (store) => {
      for (const key of keys) {
        const result = await store.claim(key, LONG)
        if (result.status !== 'acquired') throw new Error(`${key} was ${result.status}`)
        expect(await store.complete(result.claim, LONG)).toBe(true)
      }
      // A claim in flight at the crash: after the restart it is still held or gone, never done.
      // PostgreSQL commits a claim without waiting for its WAL flush, so a crash may lose the lease;
      // Redis never writes a lease to the AOF, so a restart always does (docs/design.md, Durability
      // of the PostgreSQL / Redis store): the event is then claimable again.
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
      await withStore(openStore(kind), async (after) => {
        for (const key of keys) expect({ key, status: (await after.claim(key, LONG)).status }).toEqual({ key, status: 'duplicate' })
        const afterCrash = (await after.claim(`${prefix}held-through-crash`, LONG)).status
        expect(kind === 'postgres' ? ['in_flight', 'acquired'] : ['acquired']).toContain(afterCrash)
      })
    })
  }, 60_000)
})
