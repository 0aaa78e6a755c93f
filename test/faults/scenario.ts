/**
 * The shape most scenarios share: one receiver process (ordering on, for reconcile), the faithful
 * sender's traffic to it, a fault that begins mid-traffic and ends a while later, the documented
 * recovery (recoverEndpoint, then reconcile), the figures, and the checks every scenario makes
 * (every event handled exactly once, no 2xx without a record).
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { DedupStore } from '@email-webhooks/core'
import { afterAll, expect } from 'vitest'
import { type Figures, measure, report } from './figures.js'
import { type ReceiverConfig, type ReceiverProcess, type StoreConfig, startReceiver } from './processes.js'
import { type Answer, RECONCILABLE, type Run, type RunOptions, startRun } from './run.js'

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

/** A temporary folder for this test file, removed after it (kept with FAULTS_KEEP=1, to read the journals and logs). */
export function scratch(name: string): (file: string) => string {
  const dir = mkdtempSync(join(tmpdir(), `email-webhooks-faults-${name}-`))
  afterAll(() => {
    if (process.env.FAULTS_KEEP === '1') console.log(`kept ${dir}`)
    else rmSync(dir, { recursive: true, force: true })
  })
  return (file) => join(dir, file)
}

export interface OutageScenario {
  scenario: string
  method: string
  adapter: 'express' | 'hono'
  store: StoreConfig
  /** A fresh store on the same data, for recoverEndpoint's lookups and the figures; opened after the fault. */
  openStore: () => DedupStore
  file: (name: string) => string
  events: number
  perSecond: number
  /** When the fault begins, ms after the traffic started. */
  faultAtMs: number
  /** How long the fault lasts once it has begun (the time `begin` and `end` take is extra). */
  faultMs: number
  begin(receiver: ReceiverProcess): Promise<void>
  end(receiver: ReceiverProcess): Promise<void>
  receiver?: Partial<ReceiverConfig>
  strace?: string[]
  env?: Record<string, string>
  run?: RunOptions
}

export interface OutageResult {
  figures: Figures
  run: Run
  receiver: ReceiverProcess
}

/** Runs one fault under traffic and measures it (the receiver is killed afterwards). */
export async function runOutage(s: OutageScenario): Promise<OutageResult> {
  const tag = s.scenario.replace(/\W+/g, '-')
  const journal = s.file(`${tag}.journal`)
  const receiver = await startReceiver(
    {
      adapter: s.adapter,
      store: s.store,
      journal,
      log: s.file(`${tag}.log`),
      tag: 'r0',
      ...s.receiver,
      options: { ...RECONCILABLE, ...s.receiver?.options },
    },
    { strace: s.strace, env: s.env },
  )
  const run = startRun(receiver.url, s.run)
  let store: DedupStore | undefined
  const watchdog = receiverWatchdog(receiver)
  const alive = watchdog.alive
  try {
    const traffic = run.traffic(s.events, s.perSecond)
    await sleep(s.faultAtMs)
    run.mark('fault')
    await alive(s.begin(receiver))
    run.mark('down')
    await sleep(s.faultMs)
    run.mark('up')
    await alive(s.end(receiver))
    run.mark('fixed')
    // Recovered as soon as the fault is over, as an operator (or a health check) would: traffic goes on.
    store = s.openStore()
    const opened = store
    await alive(run.recoverIfDisabled(opened))
    await alive(traffic)
    await alive(run.settle({ store: opened }))
    const lookup = store.lookup?.bind(store)
    if (!lookup) throw new Error('the store has no lookup')
    const figures = await measure(run, s.scenario, s.method, journal, (id) => lookup(`default:${id}`), receiver.logs)
    report(figures)
    return { figures, run, receiver }
  } finally {
    watchdog.stop()
    await run.close()
    await receiver.kill()
    await store?.close?.()
  }
}

/**
 * Fails the scenario as soon as the receiver process ends by itself (a crash: its stderr is in the
 * test output), instead of letting the sender's attempts and recover's rounds meet a closed port
 * until the test's timeout (a crash at a PostgreSQL stop took 180 s to show that way). Under strace
 * the child is strace, which a scenario may end on purpose: not watched.
 */
function receiverWatchdog(receiver: ReceiverProcess): { alive: <T>(step: Promise<T>) => Promise<T>; stop: () => void } {
  let onExit: ((code: number | null, signal: NodeJS.Signals | null) => void) | undefined
  const died = new Promise<never>((_resolve, reject) => {
    if (receiver.child.pid !== receiver.pid) return
    onExit = (code, signal) =>
      reject(
        new Error(
          `the receiver (pid ${receiver.pid}) exited mid-scenario (${code ?? signal}); its stderr is above, its last log lines:\n${receiver.logs.slice(-5).join('\n')}`,
        ),
      )
    receiver.child.once('exit', onExit)
  })
  died.catch(() => {})
  return {
    alive: (step) => {
      step.catch(() => {})
      return Promise.race([step, died])
    },
    stop: () => {
      if (onExit) receiver.child.off('exit', onExit)
    },
  }
}

/**
 * Answers to attempts made while the fault lasted (started after the mark `down` and answered
 * before the mark `up`; on a loaded machine an attempt may wait a while before the receiver
 * reads it) other than
 * 503 store_unavailable, 409 in_flight (a retry of an event still held: its handler still runs,
 * or its record is still being tried), or a 2xx duplicate of an event acknowledged before.
 */
export function unexpectedFaultAnswers(run: Run): Answer[] {
  const from = run.marks.get('down') as number
  const to = run.marks.get('up') as number
  const acknowledgedAt = new Map<string, number>()
  for (const a of run.answers) if (a.status >= 200 && a.status < 300 && !acknowledgedAt.has(a.eventId)) acknowledgedAt.set(a.eventId, a.at)
  return run.answers.filter((a) => {
    if (a.at < from || a.at + a.ms > to) return false
    // No answer (the sender's timeout on an overloaded machine): a failure the figures show (p99, max), not an answer.
    if (a.status === 0) return false
    if (a.status === 503 && a.code === 'store_unavailable') return false
    if (a.status === 409 && a.code === 'in_flight') return false
    return !(a.status >= 200 && a.status < 300 && (acknowledgedAt.get(a.eventId) ?? Number.POSITIVE_INFINITY) < a.at)
  })
}

/**
 * What every scenario promises: every event emitted is handled exactly once in the end, through the
 * sender's deliveries (and recoverEndpoint) or, for those no delivery record shows, reconcile; and
 * no 2xx left without a record.
 */
export function expectExactlyOnce(f: Figures): void {
  expect(f.okWithoutRecordIds, '2xx without a record').toEqual([])
  expect(f.lostIds, 'delivered and listed, but never handled through the sender’s deliveries').toEqual([])
  expect(f.doubled, 'handled more than once').toEqual([])
  expect(f.handledNotRecorded, 'handled but not recorded as done').toBe(0)
  // Nothing ran twice, so no log line may say it might have (a lost reply to a complete that
  // landed, ioredis resending it: lost-reply.test.ts).
  expect(f.secondRunLogs, 'log lines of a possible second run where none happened').toBe(0)
  expect(f.reconcileProblems, 'emails reconcile did not finish').toEqual([])
  expect(f.unhandledIds, 'never handled, by the sender’s deliveries or reconcile').toEqual([])
  // Reconcile brought back exactly what the sender did not deliver (emitted while disabled, or
  // failed past the 100 records it lists): everything else came through the sender's deliveries.
  expect(f.reconciled, 'brought back by reconcile').toBe(f.notSent + f.pastList)
  expect(f.once, 'handled exactly once').toBe(f.emitted)
}
