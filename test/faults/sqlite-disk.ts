/**
 * The default SQLite store's disk fails under traffic. Full: the store's file system fills up
 * for 2.5 s, then the space comes back (a tmpfs filled with a file where this machine may mount
 * one, else ENOSPC injected by strace; disk.ts). Slow: every WAL sync takes longer (strace
 * delays fdatasync). The receiver is never restarted: the store must recover by itself, answer
 * 503 store_unavailable while it cannot record, say in the log why, and every event emitted
 * must be handled exactly once.
 */
import { join } from 'node:path'
import { SqliteDedupStore } from '@email-webhooks/core/sqlite'
import { describe, expect, it } from 'vitest'
import { straceAvailable } from '../store/strace.js'
import { diskFullMethod, fillUp, mountTmpfs, straceDiskFull, straceSlowSync } from './disk.js'
import { measure, report } from './figures.js'
import { type FaultLevel, pick } from './level.js'
import { startReceiver } from './processes.js'
import { RECONCILABLE, startRun } from './run.js'
import { expectExactlyOnce, runOutage, scratch, sleep, unexpectedFaultAnswers } from './scenario.js'

const METHOD = diskFullMethod()
/** With strace, the disk is full from this write of the WAL on (about 5 writes an event, so after some 80 events). */
const STRACE_FULL_FROM_WRITE = 400

/** Resolves once a receiver log line matches `pattern` (at most `timeoutMs`). */
async function logged(logs: string[], pattern: RegExp, timeoutMs = 30_000): Promise<void> {
  for (let waited = 0; !logs.some((l) => pattern.test(l)); waited += 20) {
    if (waited > timeoutMs) throw new Error(`no log line matched ${pattern} within ${timeoutMs} ms`)
    await sleep(20)
  }
}

/** The disk scenarios at `level`: quick runs the disk full and the 300 ms slow disk, with less traffic. */
export function sqliteDiskScenarios(level: FaultLevel): void {
  const FULL_MS = pick(level, { quick: 1_500, full: 2_500, long: 10_000 })
  const LONG = level === 'long'
  describe('the SQLite store’s disk fails under traffic', () => {
    const file = scratch('sqlite-disk')
    it.skipIf(METHOD === 'strace' && !straceAvailable)(
      `disk full for ${FULL_MS / 1000} s (${METHOD}): 503 store_unavailable while full, the log says why, the store recovers without a restart, every event emitted handled exactly once (recover, then reconcile)`,
      async () => {
        const tmpfs = METHOD === 'tmpfs' ? mountTmpfs(32) : undefined
        try {
          const db = join(tmpfs?.dir ?? file(''), 'dedup.db')
          let filler: { free: () => void } | undefined
          const result = await runOutage({
            scenario: `SQLite disk full ${FULL_MS / 1000} s (Express, ${METHOD})`,
            method:
              METHOD === 'tmpfs'
                ? 'tmpfs of 32 MiB filled by a file, which is then deleted'
                : `strace: ENOSPC on every write of the WAL from the ${STRACE_FULL_FROM_WRITE}th, until strace is killed`,
            adapter: 'express',
            store: { kind: 'default', path: db },
            env: { EMAIL_WEBHOOKS_DB: db },
            strace: METHOD === 'strace' ? straceDiskFull(`${db}-wal`, STRACE_FULL_FROM_WRITE) : undefined,
            openStore: () => new SqliteDedupStore({ path: db }),
            file,
            events: pick(level, { quick: 80, full: 160, long: 1_000 }),
            perSecond: 40,
            // With strace the disk fills at a write, not at a time: the fault is down once the log says so.
            faultAtMs: METHOD === 'tmpfs' ? 1_000 : 0,
            faultMs: FULL_MS,
            async begin(receiver) {
              if (tmpfs) filler = fillUp(tmpfs.dir)
              else await logged(receiver.logs, /SQLITE_FULL/)
            },
            async end(receiver) {
              if (filler) filler.free()
              else await receiver.detachStrace()
            },
          })
          const { figures, run, receiver } = result
          expectExactlyOnce(figures)
          expect(unexpectedFaultAnswers(run)).toEqual([])
          // The log says what happened: the disk is full.
          expect(receiver.logs.find((l) => /503 store_unavailable/.test(l) && /SQLITE_FULL|disk is full/.test(l))).toBeDefined()
          // The same process handled events after the space came back: no restart needed.
          const fixed = run.marks.get('fixed') as number
          expect(run.answers.filter((a) => a.at > fixed && a.status === 200).length).toBeGreaterThan(0)
        } finally {
          tmpfs?.unmount()
        }
      },
      180_000,
    )

    it.skipIf(!straceAvailable).each(
      [
        [300, 'answers 200 in time'],
        [2_000, 'longer than storeTimeoutMs: 503 in time, then duplicates'],
      ].slice(0, level === 'quick' ? 1 : 2) as Array<[number, string]>,
    )(
      'slow disk: every WAL sync %i ms late (strace): %s, all inside the sender’s 10 s, no event handled twice',
      async (delayMs) => {
        const db = file(`slow-${delayMs}.db`)
        const journal = file(`slow-${delayMs}.journal`)
        const receiver = await startReceiver(
          {
            adapter: 'hono',
            store: { kind: 'sqlite', path: db },
            journal,
            log: file(`slow-${delayMs}.log`),
            tag: 'r0',
            options: RECONCILABLE,
          },
          { strace: straceSlowSync(delayMs) },
        )
        const run = startRun(receiver.url)
        const store = new SqliteDedupStore({ path: db })
        try {
          run.mark('fault')
          run.mark('down')
          await run.traffic(pick(level, { quick: 40, full: 120, long: 600 }), 40)
          await run.settle({ store })
          // The fault lasts the whole run.
          run.mark('up')
          run.mark('fixed')
          const figures = await measure(
            run,
            `SQLite slow disk, fdatasync +${delayMs} ms (Hono)`,
            `strace: fdatasync delayed ${delayMs} ms, the whole run`,
            journal,
            (id) => store.lookup(`default:${id}`),
            receiver.logs,
          )
          report(figures)
          expectExactlyOnce(figures)
          // Inside the sender's 10 s: no attempt timed out, none took longer.
          expect(run.answers.filter((a) => a.failure !== undefined || a.ms >= 10_000)).toEqual([])
          // What is not a 200 is a 503 store_unavailable (the sync outlasted storeTimeoutMs) or a 409 in_flight.
          const codes = new Set(run.answers.filter((a) => a.status !== 200).map((a) => `${a.status} ${a.code}`))
          expect([...codes].filter((c) => c !== '503 store_unavailable' && c !== '409 in_flight')).toEqual([])
        } finally {
          await run.close()
          await receiver.kill()
          await store.close()
        }
      },
      // Long mode: 600 events through syncs 2 s late, then reconcile's 600 more, each answered after a sync.
      LONG ? 900_000 : 180_000,
    )
  })
}
