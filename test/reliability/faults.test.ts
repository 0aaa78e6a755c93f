/**
 * Faults, over real listeners on every adapter with a real SQLite file behind a fault-injecting
 * store: the store throws, hangs or is slow; a handler outlives its deadline; a client hangs up
 * mid-body; and a receiver process is killed with SIGKILL under traffic, restarted on the same
 * SQLite file, and everything not acknowledged is redelivered.
 *
 * Receiver-level versions of the store and deadline cases (memory store, no HTTP) are in
 * test/pipeline/receiver.test.ts; SIGKILL of a store process in test/store/sqlite-processes.test.ts.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import net from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Claim, ClaimOptions, ClaimResult, CompleteOptions, DedupStore } from '@email-webhooks/core'
import { SqliteDedupStore } from '@email-webhooks/core/sqlite'
import { createSignedDelivery, type SignedDelivery, TEST_SECRET } from '@email-webhooks/core/testing'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { until } from '../support/time.js'
import { killAll, killed, MiB, next, readJournal, spawn, startReceiverProcess } from './children.js'
import {
  ADAPTERS,
  type AnyOptions,
  collectEmitted,
  LONG,
  printTable,
  type RawAnswer,
  type Receiver,
  sleep,
  startReceiver,
} from './support.js'

const dir = mkdtempSync(join(tmpdir(), 'email-webhooks-faults-'))
let files = 0
const newDb = () => join(dir, `faults-${files++}.sqlite`)
const figures: Record<string, string | number>[] = []
afterEach(killAll)
afterAll(() => {
  rmSync(dir, { recursive: true, force: true })
  if (figures.length > 0) printTable('kill -9 under traffic, restart on the same SQLite file, redeliver what was not acknowledged', figures)
})

type Mode = 'ok' | 'throw' | 'hang' | 'slow'

/** A real SQLite store with switchable faults on claim and complete. */
class FaultyStore implements DedupStore {
  claimMode: Mode = 'ok'
  completeMode: Mode = 'ok'
  claims = 0
  slowMs = 0
  private gate: { promise: Promise<void>; open: () => void } = FaultyStore.newGate()
  constructor(readonly inner: SqliteDedupStore) {}

  static newGate() {
    let open = () => {}
    const promise = new Promise<void>((resolve) => {
      open = resolve
    })
    return { promise, open }
  }

  private async fault(mode: Mode): Promise<void> {
    if (mode === 'throw') throw new Error('SQLITE_IOERR: disk I/O error')
    if (mode === 'hang') await this.gate.promise
    if (mode === 'slow') await sleep(this.slowMs)
  }

  recover(): void {
    this.claimMode = 'ok'
    this.completeMode = 'ok'
    this.gate.open()
    this.gate = FaultyStore.newGate()
  }

  async claim(key: string, opts: ClaimOptions): Promise<ClaimResult> {
    this.claims++
    await this.fault(this.claimMode)
    return this.inner.claim(key, opts)
  }
  async complete(claim: Claim, opts: CompleteOptions): Promise<boolean> {
    await this.fault(this.completeMode)
    return this.inner.complete(claim, opts)
  }
  release(claim: Claim): Promise<boolean> {
    return this.inner.release(claim)
  }
}

function raw(delivery: SignedDelivery) {
  return { headers: Object.entries(delivery.headers), body: new TextEncoder().encode(delivery.body) }
}

const codeOf = (answer: RawAnswer) => (JSON.parse(answer.text) as { error?: { code: string } }).error?.code
const redeliver = (delivery: SignedDelivery) => createSignedDelivery({ event: delivery.event })

describe.each(ADAPTERS)('faults on %s', (name) => {
  let receiver: Receiver | undefined
  let store: FaultyStore
  const attempts: number[] = []
  afterEach(async () => {
    await receiver?.close()
    receiver = undefined
    await store.inner.close()
  })

  async function start(options: AnyOptions = {}, handler?: (event: unknown, ctx: { attempt: number; signal: AbortSignal }) => unknown) {
    attempts.length = 0
    store = new FaultyStore(new SqliteDedupStore({ path: newDb() }))
    receiver = await startReceiver(
      name,
      TEST_SECRET,
      {
        'email.bounced': (event: unknown, ctx: { attempt: number; signal: AbortSignal }) => {
          attempts.push(ctx.attempt)
          return handler?.(event, ctx)
        },
      },
      { store, storeTimeoutMs: 500, leaseMs: 1_000, ...options },
    )
    return receiver
  }

  it('answers 503 store_unavailable when the store throws, runs nothing, and handles the retry once the store is back', async () => {
    const r = await start()
    const delivery = await createSignedDelivery({ type: 'email.bounced' })
    store.claimMode = 'throw'
    const down = await r.send(raw(delivery))
    expect([down.status, codeOf(down)]).toEqual([503, 'store_unavailable'])
    expect(down.text).not.toContain('SQLITE_IOERR')
    expect(attempts).toEqual([])
    store.recover()
    const retried = await r.send(raw(await redeliver(delivery)))
    // {"ok":true}, not a duplicate, and attempt 1: the failed delivery marked nothing.
    expect([retried.status, retried.text]).toEqual([200, '{"ok":true}'])
    expect(attempts).toEqual([1])
  })

  it('answers 503 after storeTimeoutMs when the store hangs, gives the late claim back, and handles the retry', async () => {
    const r = await start()
    const delivery = await createSignedDelivery({ type: 'email.bounced' })
    store.claimMode = 'hang'
    const started = performance.now()
    const down = await r.send(raw(delivery))
    expect(performance.now() - started).toBeGreaterThanOrEqual(490)
    expect([down.status, codeOf(down)]).toEqual([503, 'store_unavailable'])
    expect(JSON.parse(down.text).error.message).toMatch(/storeTimeoutMs \(500 ms\)/)
    store.recover()
    await sleep(50)
    const retried = await r.send(raw(await redeliver(delivery)))
    expect([retried.status, retried.text]).toEqual([200, '{"ok":true}'])
    // The late claim was released, so the retry took the event at once (attempt 2), no lease wait.
    expect(attempts).toEqual([2])
  })

  it('answers 200 when the store is slow but within storeTimeoutMs, and 503 when it is slower', async () => {
    const r = await start()
    store.claimMode = 'slow'
    store.slowMs = 50
    const slow = await r.send(raw(await createSignedDelivery({ type: 'email.bounced' })))
    expect(slow.status).toBe(200)
    store.slowMs = 1_000
    const tooSlow = await createSignedDelivery({ type: 'email.bounced' })
    const down = await r.send(raw(tooSlow))
    expect([down.status, codeOf(down)]).toEqual([503, 'store_unavailable'])
    // The slow claim lands 1 s after it was sent and is given back; retry after that.
    store.recover()
    await sleep(800)
    expect((await r.send(raw(await redeliver(tooSlow)))).status).toBe(200)
    expect(attempts).toEqual([1, 2])
  })

  it('answers 503 when complete fails after the handler succeeded, records it in the background once the store is back, and never runs the handler again', async () => {
    const r = await start()
    const delivery = await createSignedDelivery({ type: 'email.bounced' })
    store.completeMode = 'throw'
    const down = await r.send(raw(delivery))
    expect([down.status, codeOf(down)]).toEqual([503, 'store_unavailable'])
    expect(JSON.parse(down.text).error.message).toMatch(/keeps trying to record it in the background/)
    // Still down: the event is not released, its retry meets the lease (409), never a second run.
    const early = await r.send(raw(await redeliver(delivery)))
    expect(early.status).toBe(409)
    store.recover()
    // Past the lease too: the complete tried again in the background lands, the retries are duplicates.
    await sleep(1_100)
    const retried = await r.send(raw(await redeliver(delivery)))
    expect([retried.status, retried.text]).toEqual([200, '{"ok":true,"duplicate":true}'])
    expect(attempts).toEqual([1])
  })

  it.each([
    ['stops when ctx.signal aborts', true],
    ['ignores ctx.signal', false],
  ])(
    'answers 503 handler_timeout at the deadline when the handler %s, and keeps the key until that run settles: released after a failure, done after a late success',
    async (_name, cooperative) => {
      let abortedAt = -1
      let sentAt = 0
      let strayFinished = false
      const STRAY_MS = 600
      const r = await start({ handlerTimeoutMs: 150 }, async (_event, ctx) => {
        if (ctx.attempt > 1) return
        await new Promise<void>((resolve, reject) => {
          ctx.signal.addEventListener('abort', () => {
            abortedAt = performance.now() - sentAt
            if (cooperative) reject(ctx.signal.reason)
          })
          // A handler that ignores the signal runs on for a while.
          if (!cooperative)
            setTimeout(() => {
              strayFinished = true
              resolve()
            }, STRAY_MS)
        })
      })
      const delivery = await createSignedDelivery({ type: 'email.bounced' })
      sentAt = performance.now()
      const down = await r.send(raw(delivery))
      expect([down.status, codeOf(down)]).toEqual([503, 'handler_timeout'])
      // The answer did not wait for a handler that ignores the signal.
      expect(strayFinished).toBe(false)
      // The deadline counts from the claim, which comes after the request was sent: aborted 150 ms
      // after the claim at the earliest, not at once. Timed from the send, not from the handler's
      // start: on a busy machine the claim took so long that the handler started with its signal
      // already aborted (0.13 ms after its start, a Node 24 run of the matrix), which is right.
      expect(abortedAt).toBeGreaterThanOrEqual(145)
      if (!cooperative) {
        // The first run is still going: the key is not handed to a second run at the same time.
        const during = await r.send(raw(await redeliver(delivery)))
        expect([during.status, codeOf(during)]).toEqual([409, 'in_flight'])
        expect(attempts).toEqual([1])
        // Waits for the late run and its record (written after it, in the background), not for a clock:
        // on a loaded machine the record landed after STRAY_MS, and a retry then still met 409.
        await until(() => strayFinished, 'the handler that ignored its signal to finish')
        // The late run succeeded, so the event is done: the retry is a duplicate, nothing runs twice.
        let after = await r.send(raw(await redeliver(delivery)))
        await until(async () => {
          if (after.status !== 409) return true
          after = await r.send(raw(await redeliver(delivery)))
          return false
        }, "the late run's record to land")
        expect([after.status, after.text]).toEqual([200, '{"ok":true,"duplicate":true}'])
        expect(attempts).toEqual([1])
        return
      }
      // The cooperative run failed at the deadline and was released: the retry runs it (attempt 2).
      const retried = await r.send(raw(await redeliver(delivery)))
      expect([retried.status, retried.text]).toEqual([200, '{"ok":true}'])
      expect(attempts).toEqual([1, 2])
    },
  )

  it('claims nothing, runs nothing and logs nothing when the client hangs up mid-body, and keeps serving', async () => {
    const errors: string[] = []
    const r = await start({ onError: (error: { code: string }) => void errors.push(error.code) })
    const emitted = collectEmitted()
    const uncaught: unknown[] = []
    const onUncaught = (error: unknown) => void uncaught.push(error)
    process.on('uncaughtException', onUncaught)
    process.on('unhandledRejection', onUncaught)
    try {
      for (let i = 0; i < 5; i++) {
        const delivery = await createSignedDelivery({ type: 'email.bounced' })
        const { hostname, port } = new URL(r.url as string)
        const socket = net.connect(Number(port), hostname)
        await new Promise<void>((resolve) => socket.once('connect', () => resolve()))
        const head = Object.entries(delivery.headers).map(([k, v]) => `${k}: ${v}`)
        socket.write(
          [`POST /hooks HTTP/1.1`, `host: ${hostname}:${port}`, ...head, `content-length: ${delivery.body.length}`, '', ''].join('\r\n'),
        )
        socket.write(delivery.body.slice(0, delivery.body.length >> 1))
        await sleep(30)
        socket.destroy()
      }
      await sleep(300)
    } finally {
      emitted.stop()
      process.off('uncaughtException', onUncaught)
      process.off('unhandledRejection', onUncaught)
    }
    expect(store.claims).toBe(0)
    expect(attempts).toEqual([])
    expect(uncaught).toEqual([])
    expect(emitted.text()).toBe('')
    const after = await r.send(raw(await createSignedDelivery({ type: 'email.bounced' })))
    expect(after.status).toBe(200)
    expect(errors).toEqual([])
  })
})

describe.each(['express', 'hono'] as const)('kill -9 of a %s receiver process under traffic', (adapter) => {
  it('keeps every acknowledged event, handles every event after restart and redelivery, and runs none twice unless it was cut off', async () => {
    const db = join(dir, `kill-${adapter}.sqlite`)
    const journal = join(dir, `kill-${adapter}.journal`)
    const leaseMs = 1_500
    const first = await startReceiverProcess({ adapter, db, journal, tag: 'first', leaseMs, maxHandlerDelayMs: 20 })
    const load = spawn('load-child.mjs', [])
    await next(load, 'ready')
    load.send({ cmd: 'flood', url: first.url, concurrency: 16, tag: `kill-${adapter}` })
    // Kill once a good number of events were acknowledged, while 16 requests are in flight.
    const target = LONG ? 3_000 : 400
    for (;;) {
      const progress = await next(load, 'progress', 20_000)
      if (progress.acked >= target) break
    }
    expect(await killed(first.child)).toBe('SIGKILL')
    await sleep(200)
    const flooded = next(load, 'flood-done')
    load.send('stop')
    const flood = await flooded
    const ackedBeforeKill = new Set<string>(flood.acked)

    // Restart on the same file (and port), then redeliver everything not acknowledged.
    const second = await startReceiverProcess({ adapter, db, journal, tag: 'second', leaseMs, port: first.port })
    const redelivered = next(load, 'redeliver-done', 60_000)
    load.send({ cmd: 'redeliver', url: second.url })
    const result = await redelivered

    const runs = readJournal(journal)
    const created: number = flood.created
    const handled = [...runs].filter(([, entry]) => entry.ended.length > 0)
    const ackedRunTwice = [...ackedBeforeKill].filter((id) => (runs.get(id)?.begun.length ?? 0) !== 1)
    const ackedNotEnded = [...ackedBeforeKill].filter((id) => runs.get(id)?.ended.length !== 1 || runs.get(id)?.ended[0] !== 'first')
    // Re-run after the kill: the first run began in the killed process and was never acknowledged.
    const reRun = [...runs].filter(([, entry]) => entry.begun.length > 1)
    const reRunNotCutOff = reRun.filter(([id, entry]) => ackedBeforeKill.has(id) || entry.begun[0] !== 'first' || entry.begun.length > 2)
    const cutOffMidHandler = reRun.filter(([, entry]) => entry.ended.length === 1).length
    const store = new SqliteDedupStore({ path: db })
    const notRecorded: string[] = []
    try {
      for (let n = 0; n < created; n++) {
        const key = `default:kill-${adapter}-${n}`
        if ((await store.claim(key, { leaseMs: 60_000, retentionMs: 3_600_000 })).status !== 'duplicate') notRecorded.push(key)
      }
    } finally {
      await store.close()
    }
    const rssMiB = Math.round(second.rss / MiB)
    figures.push({
      adapter,
      'events sent': created,
      'acked before kill': ackedBeforeKill.size,
      'redelivered after restart': result.redelivered,
      handled: handled.length,
      'acked but lost': ackedNotEnded.length,
      'not recorded': notRecorded.length,
      'acked run twice': ackedRunTwice.length,
      're-run (killed mid-handler)': cutOffMidHandler,
      're-run (killed before complete)': reRun.length - cutOffMidHandler,
      'restart RSS MiB': rssMiB,
    })
    expect(result.unexpected).toEqual([])
    expect(result.unacked).toEqual([])
    expect(result.acked).toHaveLength(created)
    expect(ackedNotEnded).toEqual([])
    expect(ackedRunTwice).toEqual([])
    expect(notRecorded).toEqual([])
    expect(handled).toHaveLength(created)
    expect(reRunNotCutOff).toEqual([])
    // The kill cut traffic off: some events were not acknowledged before it.
    expect(result.redelivered).toBeGreaterThan(0)
    expect(await killed(second.child)).toBe('SIGKILL')
  }, 120_000)
})
