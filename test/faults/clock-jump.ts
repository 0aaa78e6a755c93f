/**
 * The receiver's clock jumps by +10 min, is fixed, then jumps by −10 min and is fixed again (its
 * injected `now`; the sender's clock is right). While it is off, every delivery is refused as
 * the contract says: 401 timestamp_too_old when the receiver is ahead, timestamp_too_new when it
 * is behind; the sender soon disables the endpoint. The first refusal is logged, with the
 * measured offset, once. Once the clock is fixed the endpoint is recovered and every event
 * delivered is handled exactly once.
 */
import { SqliteDedupStore } from '@email-webhooks/core/sqlite'
import { describe, expect, it } from 'vitest'
import { measure, report } from './figures.js'
import { type FaultLevel, pick } from './level.js'
import { startReceiver } from './processes.js'
import type { Answer } from './run.js'
import { RECONCILABLE, startRun } from './run.js'
import { expectExactlyOnce, scratch, sleep } from './scenario.js'

const JUMP_MS = 10 * 60 * 1000

/** The clock scenario at `level`. */
export function clockJumpScenarios(level: FaultLevel): void {
  const OFF_MS = pick(level, { quick: 1_000, full: 1_500, long: 10_000 })
  describe('the receiver’s clock jumps', () => {
    const file = scratch('clock-jump')
    it(`+10 min, then −10 min, ${OFF_MS / 1000} s each: refused with 401 timestamp_too_old / timestamp_too_new while off, every event emitted handled once after the fix (recover, then reconcile)`, async () => {
      const db = file('clock.db')
      const journal = file('clock.journal')
      const receiver = await startReceiver({
        adapter: 'hono',
        store: { kind: 'sqlite', path: db },
        journal,
        log: file('clock.log'),
        tag: 'r0',
        options: RECONCILABLE,
      })
      const run = startRun(receiver.url)
      const store = new SqliteDedupStore({ path: db })
      const windows: Array<{ offsetMs: number; from: number; to: number }> = []
      try {
        const traffic = run.traffic(pick(level, { quick: 140, full: 180, long: 800 }), 20)
        for (const offsetMs of [JUMP_MS, -JUMP_MS]) {
          await sleep(1_500)
          await receiver.command({ cmd: 'clock', offsetMs })
          const from = run.now()
          await sleep(OFF_MS)
          const to = run.now()
          await receiver.command({ cmd: 'clock', offsetMs: 0 })
          windows.push({ offsetMs, from, to })
          await run.recoverIfDisabled(store)
        }
        await traffic
        // One event emitted after both fixes, whatever the traffic's timing: on a loaded machine the
        // traffic can end before the second window does, and then nothing else shows the receiver accepting again.
        await run.traffic(1, 1)
        const probe = run.emitted.at(-1)?.id
        await run.settle({ store })
        const figures = await measure(
          run,
          `Receiver clock +10 min then −10 min, ${OFF_MS / 1000} s each (Hono)`,
          'injected now() of the receiver, moved over IPC',
          journal,
          (id) => store.lookup(`default:${id}`),
          receiver.logs,
        )
        const refusals = (w: { from: number; to: number }) => run.answers.filter((a: Answer) => a.at >= w.from && a.at <= w.to)
        const [ahead, behind] = windows as [(typeof windows)[0], (typeof windows)[0]]
        figures.duringFault = `+10 min: ${tallyCodes(refusals(ahead))}; −10 min: ${tallyCodes(refusals(behind))}`
        report(figures)
        expectExactlyOnce(figures)
        // Refused as the contract says, and nothing else, while the clock was off (the attempts that
        // started within 100 ms of a jump may have been checked before it).
        const settled = (w: { from: number; to: number }) => refusals({ from: w.from + 100, to: w.to })
        expect(new Set(settled(ahead).map((a) => `${a.status} ${a.code}`))).toEqual(new Set(['401 timestamp_too_old']))
        // The second window may see no attempt at all on a loaded machine (the traffic sent before it,
        // or the endpoint disabled by the first window's refusals): whatever lands in it is refused as too new.
        expect(settled(behind).filter((a) => `${a.status} ${a.code}` !== '401 timestamp_too_new')).toEqual([])
        // Accepted again once fixed: the event emitted after the fixes was answered 200 (by the sender's
        // delivery, or by the reconcile should a late refusal have disabled the endpoint again).
        expect([...run.answers, ...run.reconcileAnswers].some((a) => a.eventId === probe && a.status === 200)).toBe(true)
        // Logged once, with the measured offset (the first refusal for the timestamp; later ones,
        // those of the second jump too, are only counted): not a line per refused delivery.
        const clockLines = receiver.logs.filter((l) => /timestamp_too_(old|new)/.test(l))
        expect(clockLines).toHaveLength(1)
        expect(clockLines[0]).toMatch(/timestamp_too_old.* (599|600|601|602) s behind this server's clock/)
      } finally {
        await run.close()
        await receiver.kill()
        await store.close()
      }
    }, 180_000)
  })

  function tallyCodes(answers: Answer[]): string {
    const counts = new Map<string, number>()
    for (const a of answers) counts.set(`${a.status} ${a.code ?? ''}`.trim(), (counts.get(`${a.status} ${a.code ?? ''}`.trim()) ?? 0) + 1)
    return [...counts].map(([k, n]) => `${k} ×${n}`).join(', ') || 'none'
  }
}
