/**
 * The steps of the race, SIGKILL-while-held and SIGKILL-after-complete cases that
 * sqlite-processes.test.ts and server-processes.test.ts both run, on children forked from
 * store-child.mjs (see process-harness.ts).
 */
import type { ChildProcess } from 'node:child_process'
import type { DedupStore } from '@email-webhooks/core'
import { expect } from 'vitest'
import { scaled } from '../support/time.js'
import { type Claimed, LONG, type Message, nextMessage, type RaceReport, sleep } from './process-harness.js'

/** Waits until every racer ('race' mode) is ready, starts them all at once and resolves to their reports. */
export async function race(racers: ChildProcess[]): Promise<RaceReport[]> {
  await Promise.all(racers.map((child) => nextMessage(child, 'ready')))
  const results = racers.map((child) => nextMessage(child, 'result', 60_000))
  for (const child of racers) child.send('go')
  return Promise.all(results)
}

/** Each of the `count` keys was acquired by exactly one racer, and every racer got an answer for each key. */
export function expectOneWinnerPerKey(reports: RaceReport[], count: number): void {
  const all = reports.flatMap((report) => report.acquired)
  expect(all).toHaveLength(count)
  expect(new Set(all).size).toBe(count)
  for (const report of reports) expect(report.acquired.length + report.duplicate + report.inFlight).toBe(count)
}

export const raceShares = (reports: RaceReport[]) =>
  `per process acquired/duplicate/in_flight: ${reports.map((r) => `${r.acquired.length}/${r.duplicate}/${r.inFlight}`).join(', ')}`

interface Seen {
  status: string
  at: number
  attempt?: number
  retryAfterMs?: number
}

/**
 * After the holder of `key` on a `leaseMs` lease was killed (it reported `claimed`): claims the key
 * through `store` every 100 ms until it is acquired (for 100 tries and until 3 s after the lease
 * ended at the latest), and checks that the answers were in_flight until the lease ended, then attempt 2.
 */
export async function expectTakeoverAfterLease(store: DedupStore, key: string, claimed: Claimed, leaseMs: number): Promise<void> {
  const seen: Seen[] = []
  const deadline = claimed.after + leaseMs + scaled(3_000)
  for (let i = 0; i < 100 && Date.now() < deadline; i++) {
    const result = await store.claim(key, LONG)
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
}

/**
 * Collects the keys a 'complete' child reports completed (each must be `ok`) and kills it with
 * SIGKILL as soon as `count` have come, while it is busy with the next keys. The array goes on
 * collecting reports that were already in the IPC pipe.
 */
export async function completionsUntilKilled(child: ChildProcess, count: number): Promise<string[]> {
  const reported: string[] = []
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`fewer than ${count} completions within 20 s`)), 20_000)
    child.on('message', (message: Message) => {
      if (message.type !== 'completed') return
      expect(message.ok).toBe(true)
      reported.push(message.key)
      if (reported.length === count) {
        clearTimeout(timer)
        child.kill('SIGKILL')
        resolve()
      }
    })
  })
  return reported
}
