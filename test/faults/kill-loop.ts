/**
 * Receivers killed -9 in a loop: three instances (Express, Express, Hono) share one PostgreSQL
 * store behind a round-robin balancer; while the faithful sender delivers, one of them is killed
 * with SIGKILL every 300-600 ms (while two at least are up) and started again on its port at
 * once (8 s; 30 s with FAULTS_LONG=1). The same loop in inbox mode, on one SQLite file and on
 * PostgreSQL: each instance's worker dies with it mid-handler, and its entries are taken again
 * once their short lease (renewed while a handler runs) lapses.
 * Afterwards (recover, then reconcile) every event emitted is handled, none is acknowledged
 * without its record, and an event is handled twice only when the process of its first completed
 * run was killed before the run was recorded, within a lease of its end (the at-least-once window
 * between a handler's end and its complete: no receiver can close it without the handler's work
 * and the record sharing one transaction).
 */
import type { DedupStore } from '@email-webhooks/core'
import { PostgresDedupStore } from '@email-webhooks/core/postgres'
import { SqliteDedupStore } from '@email-webhooks/core/sqlite'
import { describe, expect, it } from 'vitest'
import { scaled, until } from '../support/time.js'
import { startBalancer } from './balancer.js'
import { measure, readJournal, report } from './figures.js'
import { type FaultLevel, pick } from './level.js'
import { type ReceiverConfig, type ReceiverProcess, type StoreConfig, startReceiver } from './processes.js'
import { RECONCILABLE, startRun, thresholdName } from './run.js'
import { scratch, sleep } from './scenario.js'
import { servers } from './services.js'

const ADAPTERS = ['express', 'express', 'hono'] as const
const PER_SECOND = 40
/** Compressed like the sender's backoff: a killed run's event waits 2 s (not 30) before another instance may take it over. */
const LEASE_MS = 2_000

interface Instance {
  adapter: (typeof ADAPTERS)[number]
  index: number
  port: number
  generation: number
  current: ReceiverProcess | undefined
}

/** One kill loop: where the instances keep their events, and in which mode they run. */
interface KillLoop {
  /** Names the run (journal, logs, the figures' row). */
  name: string
  title: string
  store: StoreConfig
  openStore: () => DedupStore
  options: ReceiverConfig['options']
  /** The lease a killed run's event waits before another instance may take it (its claim's, or in inbox mode its entry's). */
  leaseMs: number
  disableAfter: number
}

/**
 * Runs the loop: three instances behind the balancer, one killed every 300-600 ms while two at
 * least are up and started again on its port at once, under the faithful sender; then recover
 * and reconcile, and the checks. Returns the figures and when the last kill's instance was up again.
 */
async function killLoop(k: KillLoop, file: (name: string) => string, loopMs: number) {
  const journal = file(`${k.name}.journal`)
  const logs: string[] = []
  /** Tag of each killed process → when it was killed (ms since the epoch). */
  const killedAt = new Map<string, number>()
  const start = async (instance: Instance): Promise<ReceiverProcess> => {
    for (let tries = 1; ; tries++) {
      try {
        return await startOnce(instance)
      } catch (error) {
        // The killed process's port may not be free yet.
        if (tries >= 20) throw error
        await sleep(100)
      }
    }
  }
  const startOnce = async (instance: Instance): Promise<ReceiverProcess> => {
    const tag = `i${instance.index}g${instance.generation++}`
    const receiver = await startReceiver({
      adapter: instance.adapter,
      store: k.store,
      journal,
      log: file(`${k.name}-${instance.index}.log`),
      tag,
      port: instance.port,
      options: k.options,
    })
    receiver.child.on('message', (m: { type: string; level?: string; line?: string }) => {
      if (m.type === 'log') logs.push(`${tag} ${m.level} ${m.line}`)
    })
    instance.port = receiver.port
    instance.current = receiver
    return receiver
  }
  const instances: Instance[] = ADAPTERS.map((adapter, index) => ({ adapter, index, port: 0, generation: 0, current: undefined }))
  await Promise.all(instances.map(start))
  const balancer = await startBalancer(() => instances.map((i) => i.port))
  const run = startRun(balancer.url, { disableAfter: k.disableAfter })
  const store = k.openStore()
  let kills = 0
  try {
    const traffic = run.traffic(Math.round((loopMs / 1000 + 2) * PER_SECOND), PER_SECOND)
    await sleep(1_000)
    run.mark('fault')
    run.mark('down')
    const restarts: Promise<unknown>[] = []
    for (const until = performance.now() + loopMs; performance.now() < until; ) {
      await sleep(300 + Math.random() * 300)
      // One instance at least stays up (a start takes about 1 s here): with none, the balancer
      // answers 502 to everything, which tests the balancer and the sender's disabling, not the receivers.
      const live = instances.filter((i) => i.current !== undefined)
      if (live.length < 2) continue
      const victim = live[Math.floor(Math.random() * live.length)]
      if (!victim?.current) continue
      const receiver = victim.current
      victim.current = undefined
      killedAt.set(receiver.config.tag, Date.now())
      kills++
      await receiver.kill()
      restarts.push(start(victim))
    }
    await Promise.all(restarts)
    run.mark('up')
    const upAt = Date.now()
    run.mark('fixed')
    await traffic
    // In inbox mode a 2xx means queued: what a killed worker held runs once its lease lapses, and
    // what reconcile (or a late delivery) queued runs after the answer. Reconcile comes once the
    // inbox has nothing left to run, as after an incident: before it, reconcile would queue copies
    // of the events a lapsed lease still holds, and a copy that runs first stands in for the
    // sender's event (handled once, but through reconcile: seen under test:stress). The figures
    // are taken once the inbox has run what reconcile queued too.
    const drained = async () => {
      const inbox = store.inbox
      if (!inbox) return
      await until(
        async () => {
          const { pending, running } = await inbox.stats()
          return pending === 0 && running === 0
        },
        'the inbox to have nothing pending or running',
        30_000,
        50,
      )
    }
    await run.settle({ store, leaseMs: k.leaseMs, beforeReconcile: drained })
    await drained()
    const figures = await measure(
      run,
      `3 receivers killed -9 every 300-600 ms for ${loopMs / 1000} s, ${thresholdName(k.disableAfter)} (${k.title})`,
      `${kills} kills, each instance restarted on its port at once; lease ${k.leaseMs} ms`,
      journal,
      (id) => (store.lookup as NonNullable<DedupStore['lookup']>).call(store, `default:${id}`),
      logs,
    )
    report(figures)
    expect(figures.okWithoutRecordIds, '2xx without a record').toEqual([])
    expect(figures.lostIds, 'delivered and listed, but never handled through the sender’s deliveries').toEqual([])
    expect(figures.handledNotRecorded, 'handled but not recorded as done').toBe(0)
    expect(figures.reconcileProblems, 'emails reconcile did not finish').toEqual([])
    expect(figures.unhandledIds, 'never handled, by the sender’s deliveries or reconcile').toEqual([])
    // A second run only where the receiver allows one. Explained by the kill: the process of the
    // first completed run was killed after that run ended and within a lease of it (later, and
    // its complete had a whole lease to land while the process lived). Or announced: the store
    // stayed slow past the lease while another instance took the event over, and the first
    // process logged that it could not record it (docs/reliability.md, when a second run can
    // still happen). (The first run is the oldest of the email's, by the sender's event id or reconcile's.)
    const explained = ({ eventIds, ended, endedAt }: { eventIds: string[]; ended: string[]; endedAt: number[] }) => {
      const killed = killedAt.get(ended[0] as string)
      if (killed !== undefined && killed >= (endedAt[0] as number) && killed - (endedAt[0] as number) < k.leaseMs) return true
      return logs.some((l) => l.startsWith(`${ended[0]} `) && l.includes('could not record') && l.includes(eventIds[0] as string))
    }
    const unexplained = figures.doubled.filter((d) => !explained(d))
    const gaps = figures.doubled.map(({ ended, endedAt }) => {
      const killed = killedAt.get(ended[0] as string)
      return killed === undefined ? 'never killed' : `${killed - (endedAt[0] as number)} ms`
    })
    if (gaps.length > 0) console.log(`doubles: from the end of the first run to the kill of its process: ${gaps.join(', ')}`)
    expect(unexpectedDoubles(unexplained)).toEqual([])
    // Every emitted event handled, by the sender's deliveries or reconcile: once, or twice where a kill explains it.
    expect(figures.once + figures.twice).toBe(figures.emitted)
    // A start takes 0.4 s to 2 s here (more on a loaded machine), and two instances stay up.
    expect(kills).toBeGreaterThanOrEqual(loopMs / 6_000)
    return { figures, upAt, journal }
  } finally {
    await run.close()
    await balancer.close()
    await Promise.all(instances.map((i) => i.current?.kill()))
    await store.close?.()
  }
}

/**
 * The kill loops at `level`: quick runs 4 s of kills in request mode on PostgreSQL and in inbox
 * mode on SQLite; full runs 8 s, inbox mode on PostgreSQL too; long 30 s, and also with the
 * contract's disable threshold (out of reach otherwise, so that the sender's retries carry the
 * events through the kills: in-flight requests of a killed instance get 502 from the balancer, and
 * on a loaded 2-core machine ten of them in a row disable the endpoint).
 */
export function killLoopScenarios(level: FaultLevel): void {
  const LOOP_MS = pick(level, { quick: 4_000, full: 8_000, long: 30_000 })
  const THRESHOLDS = level === 'long' ? [1_000_000, 10] : [1_000_000]
  const INBOX_STORES = level === 'quick' ? (['SQLite'] as const) : (['SQLite', 'PostgreSQL'] as const)
  describe('receivers killed -9 in a loop', () => {
    const file = scratch('kill-loop')
    it.each(THRESHOLDS)(
      `3 instances on PostgreSQL, one killed every 300-600 ms for ${LOOP_MS / 1000} s, sender disabling after %i failures in a row: every event emitted handled (recover, then reconcile), doubles only where a kill cut a run off before its record`,
      async (disableAfter) => {
        await killLoop(
          {
            name: `kill-loop-${disableAfter}`,
            title: 'PostgreSQL',
            store: { kind: 'postgres', url: servers.postgres.url },
            openStore: () => new PostgresDedupStore({ connectionString: servers.postgres.url }),
            options: { ...RECONCILABLE, leaseMs: LEASE_MS },
            leaseMs: LEASE_MS,
            disableAfter,
          },
          file,
          LOOP_MS,
        )
      },
      240_000,
    )

    it.each(INBOX_STORES)(
      `inbox mode on %s, one instance (and its worker) killed every 300-600 ms for ${LOOP_MS / 1000} s: every event handled, those of a killed worker within one short lease and a backoff of the last kill`,
      async (kind) => {
        const db = file(`inbox-kill-loop-${kind}.db`)
        const { figures, upAt, journal } = await killLoop(
          {
            name: `inbox-kill-loop-${kind}`,
            title: `inbox mode, ${kind}`,
            store: kind === 'SQLite' ? { kind: 'sqlite', path: db } : { kind: 'postgres', url: servers.postgres.url },
            openStore: () =>
              kind === 'SQLite' ? new SqliteDedupStore({ path: db }) : new PostgresDedupStore({ connectionString: servers.postgres.url }),
            options: { ...RECONCILABLE, mode: 'inbox', inbox: { leaseMs: LEASE_MS, retryBaseMs: 200, pollMs: 50 } },
            leaseMs: LEASE_MS,
            disableAfter: 1_000_000,
          },
          file,
          LOOP_MS,
        )
        // The last kill's entries lapse one lease after their worker's last renewal and are taken again:
        // every run the sender's deliveries brought ended within a lease and a backoff of the loop's end.
        const lastEnd = Math.max(...[...readJournal(journal).values()].filter((r) => r.source === 'sender').flatMap((r) => r.endedAt))
        const afterLoopMs = lastEnd - upAt
        console.log(`inbox mode on ${kind}: the last handler run ended ${afterLoopMs} ms after the kill loop (lease ${LEASE_MS} ms)`)
        // 9.1 s in CI's Node 24 run beside the whole suite: the margin stretches with the machine's load.
        expect(afterLoopMs).toBeLessThan(LEASE_MS + scaled(5_000) + 5_000)
        expect(figures.once + figures.twice).toBe(figures.emitted)
      },
      240_000,
    )
  })
}

/** For the failure message: the doubles no kill explains. */
function unexpectedDoubles(doubled: Array<{ id: string; eventIds: string[]; ended: string[] }>): string[] {
  return doubled.map(
    ({ id, eventIds, ended }) => `${id} ran to its end in ${ended.map((tag, i) => `${tag} (as ${eventIds[i]})`).join(', ')}`,
  )
}
