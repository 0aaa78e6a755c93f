/**
 * The endpoint is disabled by repeated 5xx: the application's handler fails (its database is
 * down) for a while, every delivery is answered 500 handler_failed, and after 10 failures in a
 * row the sender disables the endpoint. Then the handler is fixed and the endpoint recovered the
 * documented way (recoverEndpoint: re-enable, retry what was not delivered, skip what the store
 * holds as done), then every email reconciled from its own event list. Every event emitted is
 * handled exactly once: those emitted while the endpoint was disabled (no delivery record) by
 * reconcile, the others by the sender's deliveries.
 */
import { SqliteDedupStore } from '@email-webhooks/core/sqlite'
import { describe, expect, it } from 'vitest'
import { measure, report } from './figures.js'
import { type FaultLevel, pick } from './level.js'
import { startReceiver } from './processes.js'
import { RECONCILABLE, startRun } from './run.js'
import { expectExactlyOnce, scratch, sleep } from './scenario.js'

/** The disabled-endpoint scenario at `level`. */
export function disabledScenarios(level: FaultLevel): void {
  const BROKEN_MS = pick(level, { quick: 1_000, full: 2_000, long: 10_000 })
  describe('an endpoint disabled by repeated 5xx', () => {
    const file = scratch('disabled')
    it(`handler failing for ${BROKEN_MS / 1000} s disables the endpoint; after the fix recoverEndpoint brings every event delivered back and reconcile those emitted while disabled, each handled once`, async () => {
      const db = file('disabled.db')
      const journal = file('disabled.journal')
      const receiver = await startReceiver({
        adapter: 'express',
        store: { kind: 'sqlite', path: db },
        journal,
        log: file('disabled.log'),
        tag: 'r0',
        options: RECONCILABLE,
      })
      const run = startRun(receiver.url)
      const store = new SqliteDedupStore({ path: db })
      try {
        const traffic = run.traffic(pick(level, { quick: 60, full: 150, long: 800 }), 25)
        await sleep(1_500)
        run.mark('fault')
        await receiver.command({ cmd: 'broken', value: true })
        run.mark('down')
        await sleep(BROKEN_MS)
        run.mark('up')
        await receiver.command({ cmd: 'broken', value: false })
        run.mark('fixed')
        const disabled = run.sender.endpoint(run.endpointId)?.enabled === false
        const recovered = await run.recoverIfDisabled(store)
        await traffic
        const later = await run.settle({ store })
        const figures = await measure(
          run,
          `Endpoint disabled by 500s for ${BROKEN_MS / 1000} s, then recovered (Express)`,
          'handler throws (IPC switch); recoverEndpoint once fixed, then reconcile',
          journal,
          (id) => store.lookup(`default:${id}`),
          receiver.logs,
        )
        report(figures)
        expectExactlyOnce(figures)
        expect(disabled).toBe(true)
        expect(recovered?.enable).toBe('reenabled')
        for (const report of [recovered, ...later]) expect(report?.failed ?? []).toEqual([])
        // What was refused while broken was delivered once fixed: retried by recoverEndpoint, or
        // resumed by the sender when the endpoint was enabled again (a sender that pauses the
        // deliveries of a disabled endpoint).
        const refused = new Set(run.answers.filter((a) => a.status === 500).map((a) => a.eventId))
        const deliveredAfter = new Set(
          run.answers.filter((a) => a.status === 200 && a.at > (run.marks.get('fixed') as number)).map((a) => a.eventId),
        )
        expect(refused.size).toBeGreaterThan(0)
        expect([...refused].filter((id) => !deliveredAfter.has(id))).toEqual([])
        expect(run.sender.endpoint(run.endpointId)).toMatchObject({ enabled: true, failures: 0 })
        // Every answer while broken was 500 handler_failed (or, at the very start, a 200 to a run begun before).
        const during = run.answers.filter((a) => a.at >= (run.marks.get('down') as number) + 100 && a.at <= (run.marks.get('up') as number))
        expect(new Set(during.map((a) => `${a.status} ${a.code}`))).toEqual(new Set(['500 handler_failed']))
        expect(receiver.logs.some((l) => /500 handler_failed/.test(l))).toBe(true)
      } finally {
        await run.close()
        await receiver.kill()
        await store.close()
      }
    }, 180_000)
  })
}
