/**
 * Soak: a receiver process (Express 5, then Hono on @hono/node-server, each with the SQLite
 * store) under mixed traffic from a separate load process on 127.0.0.1: new events of known
 * types, unknown types, duplicates of acknowledged events, and invalid requests. By default
 * 4,000 requests per adapter (a few seconds; enough for every kind of request to meet every
 * other in flight, and for the store to group-commit, checkpoint and purge), the two adapters at
 * once; with RELIABILITY_LONG=1, 3 minutes each, which is what the RSS bound is really about.
 *
 * Figures: requests, handled, duplicates, rejects, lost (acknowledged or sent but not handled
 * and recorded; must be 0), handled twice (must be 0), 5xx (must be 0), RSS at start and end
 * (growth under RSS_GROWTH_LIMIT).
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SqliteDedupStore } from '@email-webhooks/core/sqlite'
import { afterAll, describe, expect, it } from 'vitest'
import { killAll, MiB, next, readJournal, rssOf, spawn, startReceiverProcess } from './children.js'
import { LONG, printTable } from './support.js'

const DURATION_MS = LONG ? 180_000 : 20_000
/** The default run is bounded by requests (the deadline only caps a slow machine). */
const MAX_REQUESTS = LONG ? Number.POSITIVE_INFINITY : 4_000
const CONCURRENCY = 8
/** Generous bound on the receiver's RSS growth over the run (SQLite page cache, JIT, heap warm-up). */
const RSS_GROWTH_LIMIT = 128 * MiB
const LONG_CLAIM = { leaseMs: 60_000, retentionMs: 3_600_000 }

const dir = mkdtempSync(join(tmpdir(), 'email-webhooks-soak-'))
const figures: Record<string, string | number>[] = []
// The two adapters run at once: their processes are stopped when both are done.
afterAll(() => {
  killAll()
  rmSync(dir, { recursive: true, force: true })
  printTable(
    `Soak: ${LONG ? `${DURATION_MS / 1000} s` : `${MAX_REQUESTS} requests`} per adapter, ${CONCURRENCY} concurrent senders, SQLite store (durability 'full')`,
    figures,
  )
})

describe.concurrent.each(['express', 'hono'] as const)('soak against %s with the SQLite store', (adapter) => {
  it(
    `loses nothing, handles nothing twice and answers no 5xx under ${LONG ? `${DURATION_MS / 1000} s` : `${MAX_REQUESTS} requests`} of mixed traffic`,
    async () => {
      const db = join(dir, `${adapter}.sqlite`)
      const journal = join(dir, `${adapter}.journal`)
      const receiver = await startReceiverProcess({ adapter, db, journal, tag: 'soak', maxHandlerDelayMs: 3 })
      const load = spawn('load-child.mjs', [])
      await next(load, 'ready')
      const rssStart = await rssOf(receiver)
      const done = next(load, 'soak-done', DURATION_MS + 60_000)
      load.send({
        cmd: 'soak',
        url: receiver.url,
        durationMs: DURATION_MS,
        maxRequests: MAX_REQUESTS,
        concurrency: CONCURRENCY,
        tag: `soak-${adapter}`,
      })
      const result = await done
      const rssEnd = await rssOf(receiver)

      const runs = readJournal(journal)
      const acked: string[] = result.acked
      const handledTwice = [...runs].filter(([, entry]) => entry.ended.length > 1 || entry.begun.length > 1).map(([id]) => id)
      const notHandled = acked.filter((id) => runs.get(id)?.ended.length !== 1)
      // Every acknowledged event is recorded: a fresh connection to the file sees it as a duplicate.
      const store = new SqliteDedupStore({ path: db })
      const notRecorded: string[] = []
      try {
        for (const id of acked) if ((await store.claim(`default:${id}`, LONG_CLAIM)).status !== 'duplicate') notRecorded.push(id)
      } finally {
        await store.close()
      }
      const lost = new Set([...result.unacked, ...notHandled, ...notRecorded]).size

      figures.push({
        adapter,
        requests: result.requests,
        'events sent': result.created,
        handled: [...runs.values()].filter((entry) => entry.ended.length > 0).length,
        duplicates: result.duplicates,
        rejects: result.rejects,
        'ignored (signed non-envelope)': result.ignored,
        '409 retried': result.status['409'] ?? 0,
        lost,
        'handled twice': handledTwice.length,
        '5xx': result.fiveXX,
        'RSS start MiB': Math.round(rssStart / MiB),
        'RSS end MiB': Math.round(rssEnd / MiB),
      })
      expect(result.unexpected).toEqual([])
      expect(result.networkErrors).toBe(0)
      expect(result.fiveXX).toBe(0)
      expect(result.unacked).toEqual([])
      expect(notHandled).toEqual([])
      expect(notRecorded).toEqual([])
      expect(handledTwice).toEqual([])
      // Everything handled was acknowledged: the journal holds no event the sender did not get a 2xx for.
      expect(new Set(runs.keys())).toEqual(new Set(acked))
      expect(acked.length).toBe(result.created)
      expect(result.duplicates).toBeGreaterThan(0)
      expect(result.rejects).toBeGreaterThan(0)
      expect(result.ignored).toBeGreaterThan(0)
      expect(rssEnd - rssStart).toBeLessThan(RSS_GROWTH_LIMIT)
    },
    DURATION_MS + 120_000,
  )
})
