/**
 * Handlers slower than the sender's timeout: an app raised handlerTimeoutMs past the sender's
 * 10 s (and leaseMs with it), and some events take longer than the sender waits. The sender gives
 * up on those attempts (a timeout is a failure) and retries; the retries meet 409 in_flight while
 * the run goes on, and a duplicate 200 once it is recorded. Every event is handled once.
 *
 * Time is compressed 3.3 times by default: the sender waits 3 s, the handler may run 6 s, the
 * lease is 18 s, slow events take 4.5 s (past the sender's wait) or 7.5 s (past the handler
 * deadline too: answered 503 handler_timeout, which nobody hears, and recorded when the run
 * ends). (Tenfold, a 1 s sender timeout, also times out ordinary answers on a loaded 2-core
 * machine.) With FAULTS_LONG=1 the same in real time (10 s, 20 s, 60 s, 15 s, 25 s).
 */
import { SqliteDedupStore } from '@email-webhooks/core/sqlite'
import { describe, expect, it } from 'vitest'
import { measure, report } from './figures.js'
import { type FaultLevel, pick } from './level.js'
import { startReceiver } from './processes.js'
import { RECONCILABLE, startRun } from './run.js'
import { expectExactlyOnce, scratch } from './scenario.js'

const PER_SECOND = 20

/** The slow-handler scenario at `level`. */
export function slowHandlerScenarios(level: FaultLevel): void {
  const SCALE = level === 'long' ? 1 : 0.3
  const SENDER_TIMEOUT_MS = 10_000 * SCALE
  const HANDLER_TIMEOUT_MS = 20_000 * SCALE
  const LEASE_MS = 60_000 * SCALE
  const SLOW_MS = [15_000 * SCALE, 25_000 * SCALE]
  const EVENTS = pick(level, { quick: 40, full: 100, long: 400 })
  describe('handlers slower than the sender’s timeout', () => {
    const file = scratch('slow-handler')
    it(`every 10th event takes ${SLOW_MS.join(' or ')} ms against the sender’s ${SENDER_TIMEOUT_MS} ms: its attempts time out, the retries meet 409 then a duplicate, each event handled once`, async () => {
      const db = file('slow.db')
      const journal = file('slow.journal')
      const receiver = await startReceiver({
        adapter: 'express',
        store: { kind: 'sqlite', path: db },
        journal,
        log: file('slow.log'),
        tag: 'r0',
        options: { ...RECONCILABLE, handlerTimeoutMs: HANDLER_TIMEOUT_MS, leaseMs: LEASE_MS },
      })
      const run = startRun(receiver.url, { receiverTimeoutMs: SENDER_TIMEOUT_MS })
      const store = new SqliteDedupStore({ path: db })
      const slow = new Map<number, number>()
      try {
        run.mark('fault')
        run.mark('down')
        await run.traffic(EVENTS, PER_SECOND, (i) => {
          if (i % 10 !== 5) return undefined
          const slowMs = SLOW_MS[(i / 10) % 2 < 1 ? 0 : 1] as number
          slow.set(i, slowMs)
          return { slowMs }
        })
        await run.settle({ store, idleMs: 120_000 })
        // The fault lasts the whole run.
        run.mark('up')
        run.mark('fixed')
        const figures = await measure(
          run,
          `Handler slower than the sender’s timeout (Express, ×${SCALE})`,
          `sender timeout ${SENDER_TIMEOUT_MS} ms, handlerTimeoutMs ${HANDLER_TIMEOUT_MS}, leaseMs ${LEASE_MS}; every 10th event ${SLOW_MS.join(' or ')} ms`,
          journal,
          (id) => store.lookup(`default:${id}`),
          receiver.logs,
        )
        report(figures)
        expectExactlyOnce(figures)
        expect(figures.notSent).toBe(0)
        const slowIds = new Set([...slow.keys()].map((i) => run.emitted[i]?.id as string))
        const timedOut = new Set(run.answers.filter((a) => a.failure === 'timeout').map((a) => a.eventId))
        // The sender gave up on every slow event's first attempt, and on no other.
        expect([...slowIds].filter((id) => !timedOut.has(id))).toEqual([])
        expect([...timedOut].filter((id) => !slowIds.has(id))).toEqual([])
        // Its retries met the live run (409) or its record (200): nothing else.
        const retries = run.answers.filter((a) => slowIds.has(a.eventId) && a.failure === undefined)
        // (With ordering on, as reconcile needs, a retry may wait for the live run to settle and get
        // its 200 without a 409 first.)
        const met = new Set(retries.map((a) => `${a.status} ${a.code ?? ''}`.trim()))
        expect([...met].filter((answer) => answer !== '409 in_flight' && answer !== '200')).toEqual([])
        expect(met.has('200')).toBe(true)
      } finally {
        await run.close()
        await receiver.kill()
        await store.close()
      }
    }, 240_000)
  })
}
