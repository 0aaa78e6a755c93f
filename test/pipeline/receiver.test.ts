import { execFile } from 'node:child_process'
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import {
  type Claim,
  type ClaimOptions,
  type ClaimResult,
  type CompleteOptions,
  createReceiver,
  type DedupStore,
  type ErrorInfo,
  type HandlerContext,
  MemoryDedupStore,
  type ReceiverOptions,
  type ReceiverResponse,
  signWebhook,
  type WebhookEvent,
  WebhookHandlingError,
  WebhookVerificationError,
} from '@email-webhooks/core'
import { SqliteDedupStore } from '@email-webhooks/core/sqlite'
import {
  createEvent,
  createFixtureDeliveries,
  createSignedDelivery,
  FIXTURE_TIMESTAMP,
  type SignedDelivery,
  TEST_SECRET,
  UNKNOWN_EVENT_TYPE,
} from '@email-webhooks/core/testing'
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest'
import { scaled } from '../support/time.js'

const here = dirname(fileURLToPath(import.meta.url))
const dir = mkdtempSync(join(tmpdir(), 'email-webhooks-receiver-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
let files = 0

const OK = '{"ok":true}'
const DUPLICATE = '{"ok":true,"duplicate":true}'
const LONG = { leaseMs: 60_000, retentionMs: 3_600_000 }
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))
const errorOf = (answer: ReceiverResponse) => (JSON.parse(answer.body) as { error: { code: string; message: string } }).error

/** The same event sent again by the service: a fresh timestamp and signature. */
async function redeliver(delivery: SignedDelivery, secondsLater = 1): Promise<SignedDelivery> {
  return createSignedDelivery({ event: delivery.event, timestamp: Math.floor(Date.now() / 1000) + secondsLater })
}

/** A promise with its resolve function outside, to hold a handler until the test lets it go. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open = () => {}
  const promise = new Promise<void>((resolve) => {
    open = resolve
  })
  return { promise, open }
}

/** A receiver whose bounce handler signals `started` and then waits until `hold` opens. */
function heldReceiver(options: { leaseMs?: number } = {}) {
  const hold = gate()
  const started = gate()
  const receiver = createReceiver({
    secret: TEST_SECRET,
    store: new MemoryDedupStore(),
    ...options,
    handlers: {
      'email.bounced': async () => {
        started.open()
        await hold.promise
      },
    },
  })
  return { receiver, hold, started }
}

/** A MemoryDedupStore whose claim can be made to throw or hang, as an unreachable database would. */
class FlakyStore implements DedupStore {
  readonly inner = new MemoryDedupStore()
  mode: 'up' | 'throw' | 'hang' = 'up'
  claims = 0
  #held: (() => void)[] = []

  claim(key: string, opts: ClaimOptions): Promise<ClaimResult> {
    this.claims++
    if (this.mode === 'throw') return Promise.reject(new Error('ECONNREFUSED: the database is down'))
    if (this.mode === 'hang') return new Promise((resolve) => this.#held.push(() => resolve(this.inner.claim(key, opts))))
    return this.inner.claim(key, opts)
  }
  complete(claim: Claim, opts: CompleteOptions): Promise<boolean> {
    return this.inner.complete(claim, opts)
  }
  release(claim: Claim): Promise<boolean> {
    return this.inner.release(claim)
  }
  /** The store answers again; hung claims go through now (late). */
  recover(): void {
    this.mode = 'up'
    for (const resume of this.#held.splice(0)) resume()
  }
}

const stores: [string, () => DedupStore][] = [
  ['MemoryDedupStore', () => new MemoryDedupStore()],
  ['SqliteDedupStore', () => new SqliteDedupStore({ path: join(dir, `receiver-${files++}.db`) })],
]

describe.each(stores)('createReceiver with %s', (_name, createStore) => {
  it('answers 200 {"ok":true} after calling the typed handler once with the parsed event', async () => {
    const store = createStore()
    const calls: [WebhookEvent, HandlerContext][] = []
    const receiver = createReceiver({
      secret: TEST_SECRET,
      store,
      handlers: { 'email.bounced': (event, ctx) => void calls.push([event, ctx]) },
    })
    const event = { ...createEvent('email.bounced'), future_field: { kept: true } }
    const delivery = await createSignedDelivery({ event })
    const answer = await receiver.receive(delivery)
    expect(answer).toMatchObject({ status: 200, body: OK, outcome: 'handled', headers: { 'content-type': 'application/json' } })
    expect(calls).toHaveLength(1)
    const [seen, ctx] = calls[0]!
    expect(seen).toEqual(event)
    expect(ctx.attempt).toBe(1)
    expect(ctx.timestamp).toBe(Number(delivery.headers['webhook-timestamp']))
    expect(ctx.signal).toBeInstanceOf(AbortSignal)
    expect(ctx.signal.aborted).toBe(false)
    await store.close?.()
  })

  it('answers 200 {"ok":true,"duplicate":true} to a redelivery of a handled event without running any handler', async () => {
    const store = createStore()
    let handled = 0
    let seenByOnEvent = 0
    const receiver = createReceiver({
      secret: TEST_SECRET,
      store,
      onEvent: () => void seenByOnEvent++,
      handlers: { 'email.complained': () => void handled++ },
    })
    const delivery = await createSignedDelivery({ type: 'email.complained' })
    expect((await receiver.receive(delivery)).body).toBe(OK)
    const again = await receiver.receive(await redeliver(delivery))
    expect(again).toMatchObject({ status: 200, body: DUPLICATE, outcome: 'duplicate' })
    expect(await receiver.receive(delivery)).toMatchObject({ status: 200, body: DUPLICATE })
    expect([handled, seenByOnEvent]).toEqual([1, 1])
    // The dedup key is namespace + ":" + webhook-id.
    expect((await store.claim(`default:${delivery.event.id}`, LONG)).status).toBe('duplicate')
    await store.close?.()
  })

  it('acknowledges an unknown event type with 200 only after onUnknown resolved, and records it', async () => {
    const store = createStore()
    const order: string[] = []
    const receiver = createReceiver({
      secret: TEST_SECRET,
      store,
      handlers: { 'email.bounced': () => void order.push('typed handler') },
      onUnknown: async (event) => {
        await sleep(20)
        order.push(`onUnknown ${event.type}`)
      },
    })
    const delivery = await createSignedDelivery({ type: UNKNOWN_EVENT_TYPE })
    const answer = await receiver.receive(delivery)
    expect(answer).toMatchObject({ status: 200, body: OK, outcome: 'unknown_type' })
    expect(order).toEqual([`onUnknown ${UNKNOWN_EVENT_TYPE}`])
    expect((await receiver.receive(await redeliver(delivery))).body).toBe(DUPLICATE)
    expect(order).toHaveLength(1)
    await store.close?.()
  })

  it('acknowledges a known type that has no handler with 200 and records it as done', async () => {
    const store = createStore()
    const receiver = createReceiver({ secret: TEST_SECRET, store, handlers: { 'email.bounced': () => {} } })
    const delivery = await createSignedDelivery({ type: 'email.recipient_accepted' })
    expect(await receiver.receive(delivery)).toMatchObject({ status: 200, body: OK, outcome: 'handled' })
    expect(await receiver.receive(await redeliver(delivery))).toMatchObject({ status: 200, body: DUPLICATE })
    await store.close?.()
  })

  it('runs onEvent for every event, known or unknown, before its typed handler or onUnknown', async () => {
    const store = createStore()
    const order: string[] = []
    const receiver = createReceiver({
      secret: TEST_SECRET,
      store,
      onEvent: async (event) => {
        await sleep(1)
        order.push(`onEvent ${event.type}`)
      },
      onUnknown: (event) => void order.push(`onUnknown ${event.type}`),
      handlers: { 'email.bounced': (event) => void order.push(`handler ${event.type}`) },
    })
    for (const type of ['email.bounced', 'email.queued', UNKNOWN_EVENT_TYPE]) {
      expect((await receiver.receive(await createSignedDelivery({ type }))).status).toBe(200)
    }
    expect(order).toEqual([
      'onEvent email.bounced',
      'handler email.bounced',
      'onEvent email.queued',
      `onEvent ${UNKNOWN_EVENT_TYPE}`,
      `onUnknown ${UNKNOWN_EVENT_TYPE}`,
    ])
    await store.close?.()
  })

  it('answers 500 handler_failed when the handler throws, releases the claim, and runs the handler again on the retry (attempt 2)', async () => {
    const store = createStore()
    const attempts: number[] = []
    const errors: unknown[] = []
    const boom = new Error('database write failed')
    const receiver = createReceiver({
      secret: TEST_SECRET,
      store,
      onError: (error) => void errors.push(error),
      handlers: {
        'email.bounced': (_event, ctx) => {
          attempts.push(ctx.attempt)
          if (ctx.attempt === 1) throw boom
        },
      },
    })
    const delivery = await createSignedDelivery({ type: 'email.bounced' })
    const failed = await receiver.receive(delivery)
    expect(failed).toMatchObject({ status: 500, code: 'handler_failed', outcome: 'retry' })
    expect(errorOf(failed).code).toBe('handler_failed')
    expect(errorOf(failed).message).toMatch(/threw; the event was released and the sender will retry it\./)
    // The sender has no error object: the answer says where the cause went, the error keeps its own words.
    expect(errorOf(failed).message).toMatch(/ The cause is in the receiver's log \(or went to its onError\)\.$/)
    expect(errorOf(failed).message).not.toContain("See the error's cause")
    expect(errors).toHaveLength(1)
    expect((errors[0] as WebhookHandlingError).message).toMatch(/ See the error's cause\.$/)
    expect(errors[0]).toBeInstanceOf(WebhookHandlingError)
    expect((errors[0] as WebhookHandlingError).cause).toBe(boom)

    // Released, not left to the lease: the retry gets the event at once.
    const retried = await receiver.receive(await redeliver(delivery))
    expect(retried).toMatchObject({ status: 200, body: OK })
    expect(attempts).toEqual([1, 2])
    expect((await receiver.receive(await redeliver(delivery, 2))).body).toBe(DUPLICATE)
    await store.close?.()
  })

  it('runs the handler once for 50 concurrent copies of one event; the others get 200 duplicate or 409', async () => {
    const store = createStore()
    let handled = 0
    const receiver = createReceiver({
      secret: TEST_SECRET,
      store,
      handlers: {
        'email.bounced': async () => {
          handled++
          await sleep(20)
        },
      },
    })
    const delivery = await createSignedDelivery({ type: 'email.bounced' })
    const answers = await Promise.all(Array.from({ length: 50 }, () => receiver.receive(delivery)))
    expect(handled).toBe(1)
    expect(answers.filter((answer) => answer.body === OK)).toHaveLength(1)
    for (const answer of answers.filter((answer) => answer.body !== OK)) {
      expect(answer.body === DUPLICATE ? 'duplicate' : answer.code).toMatch(/^(duplicate|in_flight)$/)
      expect([200, 409]).toContain(answer.status)
    }
    expect((await receiver.receive(await redeliver(delivery))).body).toBe(DUPLICATE)
    await store.close?.()
  })

  it('keeps namespaces apart: two receivers with different namespaces on one store each handle the event once', async () => {
    const store = createStore()
    const handled: string[] = []
    const make = (namespace: string) =>
      createReceiver({ secret: TEST_SECRET, store, namespace, handlers: { 'email.bounced': () => void handled.push(namespace) } })
    const [a, b] = [make('billing'), make('crm')]
    const delivery = await createSignedDelivery({ type: 'email.bounced' })
    expect((await a.receive(delivery)).body).toBe(OK)
    expect((await b.receive(delivery)).body).toBe(OK)
    expect((await a.receive(delivery)).body).toBe(DUPLICATE)
    expect(handled).toEqual(['billing', 'crm'])
    expect((await store.claim(`crm:${delivery.event.id}`, LONG)).status).toBe('duplicate')
    await store.close?.()
  })
})

describe('createReceiver refuses deliveries that are not authentic', () => {
  const setup = () => {
    let handled = 0
    const store = new MemoryDedupStore()
    const receiver = createReceiver({ secret: TEST_SECRET, store, handlers: { 'email.bounced': () => void handled++ } })
    return { receiver, store, handled: () => handled }
  }

  const cases: [string, (good: SignedDelivery) => Promise<SignedDelivery> | SignedDelivery, string][] = [
    ['a tampered body', (good) => ({ ...good, body: good.body.replace('"email.bounced"', '"email.complained"') }), 'signature_mismatch'],
    [
      'a signature made with another secret',
      (good) => createSignedDelivery({ event: good.event, secret: `${TEST_SECRET}-other` }),
      'signature_mismatch',
    ],
    [
      'a timestamp 301 s old',
      (good) => createSignedDelivery({ event: good.event, timestamp: Math.floor(Date.now() / 1000) - 301 }),
      'timestamp_too_old',
    ],
    [
      'a timestamp 301 s ahead',
      (good) => createSignedDelivery({ event: good.event, timestamp: Math.floor(Date.now() / 1000) + 301 }),
      'timestamp_too_new',
    ],
    ...(['webhook-id', 'webhook-timestamp', 'webhook-signature'] as const).map(
      (header): [string, (good: SignedDelivery) => SignedDelivery, string] => [
        `no ${header} header`,
        (good) => ({ ...good, headers: Object.fromEntries(Object.entries(good.headers).filter(([name]) => name !== header)) }),
        'missing_header',
      ],
    ),
  ]

  it.each(cases)('answers 401 to %s without claiming or running a handler', async (_name, mutate, code) => {
    const { receiver, store, handled } = setup()
    const good = await createSignedDelivery({ type: 'email.bounced' })
    const answer = await receiver.receive(await mutate(good))
    expect(answer).toMatchObject({ status: 401, code, outcome: 'rejected' })
    expect(errorOf(answer).code).toBe(code)
    expect(answer.body).not.toContain(good.headers['webhook-signature'])
    expect(answer.body).not.toContain(TEST_SECRET)
    expect(answer.body).not.toContain(good.event.id)
    expect(handled()).toBe(0)
    // Nothing was claimed: the authentic delivery is handled normally afterwards.
    expect(store.size).toBe(0)
    expect((await receiver.receive(good)).body).toBe(OK)
    expect(handled()).toBe(1)
  })

  it('acknowledges a correctly signed body that is not JSON with 200, records it, runs no handler and reports it', async () => {
    const reports: [string, ErrorInfo][] = []
    let handled = 0
    const store = new MemoryDedupStore()
    const receiver = createReceiver({
      secret: TEST_SECRET,
      store,
      onError: (error, info) => void reports.push([error.code, info]),
      handlers: { 'email.bounced': () => void handled++ },
    })
    const id = crypto.randomUUID()
    const sign = () => signWebhook({ secret: TEST_SECRET, body: 'not json', id, timestamp: Math.floor(Date.now() / 1000) })
    const answer = await receiver.receive(await sign())
    expect(answer).toMatchObject({ status: 200, code: 'invalid_envelope', outcome: 'ignored' })
    expect(answer.body).toBe('{"ok":true,"ignored":"invalid_envelope"}')
    expect(reports).toEqual([['invalid_envelope', { status: 200, eventId: id }]])
    // Recorded: the sender's resend of the same bytes is a quiet duplicate, not a second report.
    expect(await receiver.receive(await sign())).toMatchObject({ status: 200, body: DUPLICATE })
    expect([store.size, handled, reports.length]).toEqual([1, 0, 1])
    expect(receiver.stats()).toMatchObject({ ignored: 1, duplicates: 1, handled: 0 })
  })

  it('acknowledges (200, ignored) a signed envelope whose id differs from webhook-id, logging a warning by default', async () => {
    const warnings: string[] = []
    const logger = { warn: (line: string) => void warnings.push(line), error: (line: string) => void warnings.push(`error ${line}`) }
    let handled = 0
    const store = new MemoryDedupStore()
    const receiver = createReceiver({ secret: TEST_SECRET, store, logger, handlers: { 'email.bounced': () => void handled++ } })
    const event = createEvent('email.bounced')
    const signed = await signWebhook({
      secret: TEST_SECRET,
      body: JSON.stringify(event),
      id: crypto.randomUUID(),
      timestamp: Math.floor(Date.now() / 1000),
    })
    const answer = await receiver.receive(signed)
    expect(answer).toMatchObject({ status: 200, code: 'invalid_envelope', outcome: 'ignored' })
    expect([store.size, handled]).toEqual([1, 0])
    expect(warnings).toHaveLength(1)
    expect(warnings[0]).toMatch(/^\[@email-webhooks\/core\] 200 invalid_envelope .*webhook-id/)
    expect(warnings[0]).not.toContain(signed.headers['webhook-signature'])
    expect(warnings[0]).not.toContain(event.data.id)
  })

  it('answers each fixture delivery of the testing kit as the fixture expects', async () => {
    const receiver = createReceiver({ secret: TEST_SECRET, store: new MemoryDedupStore(), now: () => FIXTURE_TIMESTAMP * 1000 })
    const fixtures = await createFixtureDeliveries()
    expect(fixtures.length).toBeGreaterThan(20)
    for (const fixture of fixtures) {
      const answer = await receiver.receive(fixture)
      const seen = { name: fixture.name, status: answer.status, code: answer.code, type: answer.event?.type }
      expect(seen).toEqual({
        name: fixture.name,
        status: fixture.expected.status,
        code: fixture.expected.code,
        type: fixture.expected.type,
      })
    }
  })

  it('answers 413 body_too_large past maxBodyBytes, counting UTF-8 bytes, and accepts a body of exactly the limit', async () => {
    let handled = 0
    const event = createEvent('email.bounced', { data: { id: crypto.randomUUID(), reason: 'é'.repeat(300) } })
    const delivery = await createSignedDelivery({ event })
    const bytes = Buffer.byteLength(delivery.body)
    expect(bytes).toBeGreaterThan(delivery.body.length)
    const make = (maxBodyBytes: number) =>
      createReceiver({
        secret: TEST_SECRET,
        store: new MemoryDedupStore(),
        maxBodyBytes,
        handlers: { 'email.bounced': () => void handled++ },
      })

    // The string is shorter than the limit in UTF-16 units, but longer in bytes.
    const tooLarge = await make(delivery.body.length).receive(delivery)
    expect(tooLarge).toMatchObject({ status: 413, code: 'body_too_large', outcome: 'rejected' })
    expect(await make(bytes - 1).receive({ ...delivery, body: new TextEncoder().encode(delivery.body) })).toMatchObject({ status: 413 })
    expect(handled).toBe(0)
    expect(await make(bytes).receive(delivery)).toMatchObject({ status: 200, body: OK })
    expect(handled).toBe(1)
  })
})

describe('createReceiver with another request holding the event', () => {
  it('answers 409 in_flight with Retry-After in whole seconds while another request holds the event', async () => {
    const { receiver, hold, started } = heldReceiver()
    const delivery = await createSignedDelivery({ type: 'email.bounced' })
    const first = receiver.receive(delivery)
    await started.promise
    const second = await receiver.receive(await redeliver(delivery))
    expect(second).toMatchObject({ status: 409, code: 'in_flight', outcome: 'retry' })
    const retryAfter = second.headers['retry-after']
    expect(retryAfter).toMatch(/^[0-9]+$/)
    expect(Number(retryAfter)).toBeGreaterThanOrEqual(1)
    expect(Number(retryAfter)).toBeLessThanOrEqual(30)
    hold.open()
    expect((await first).body).toBe(OK)
    expect((await receiver.receive(await redeliver(delivery, 2))).body).toBe(DUPLICATE)
  })

  it('answers Retry-After: 1 (never 0) when less than a second of the lease is left', async () => {
    const { receiver, hold, started } = heldReceiver({ leaseMs: 400 })
    const delivery = await createSignedDelivery({ type: 'email.bounced' })
    const first = receiver.receive(delivery)
    await started.promise
    const second = await receiver.receive(delivery)
    expect(second.status).toBe(409)
    expect(second.headers['retry-after']).toBe('1')
    hold.open()
    expect((await first).status).toBe(200)
  })
})

describe('createReceiver when the dedup store fails', () => {
  it('answers 503 store_unavailable when claim throws, marks nothing done, and handles the retry once the store is back', async () => {
    const store = new FlakyStore()
    const errors: [unknown, ErrorInfo][] = []
    let handled = 0
    const receiver = createReceiver({
      secret: TEST_SECRET,
      store,
      onError: (error, info) => void errors.push([error, info]),
      handlers: { 'email.bounced': () => void handled++ },
    })
    const delivery = await createSignedDelivery({ type: 'email.bounced' })
    store.mode = 'throw'
    const down = await receiver.receive(delivery)
    expect(down).toMatchObject({ status: 503, code: 'store_unavailable', outcome: 'retry' })
    expect(handled).toBe(0)
    expect(errors).toHaveLength(1)
    const [error, info] = errors[0]!
    expect(error).toBeInstanceOf(WebhookHandlingError)
    expect(((error as WebhookHandlingError).cause as Error).message).toMatch(/ECONNREFUSED/)
    // A claim the store may have taken as it failed is named: its lease answers the retries 409 until it ends.
    expect((error as WebhookHandlingError).message).toMatch(
      /nothing was marked done.*the event stays claimed until its lease ends \(leaseMs\)/,
    )
    expect(info).toEqual({ status: 503, eventId: delivery.event.id, type: 'email.bounced' })

    store.recover()
    const retried = await receiver.receive(await redeliver(delivery))
    // {"ok":true}, not a duplicate: the failed attempt recorded nothing.
    expect(retried).toMatchObject({ status: 200, body: OK })
    expect(handled).toBe(1)
  })

  it('answers 503 store_unavailable when claim hangs past storeTimeoutMs, gives back the late claim, and handles the retry', async () => {
    const store = new FlakyStore()
    const attempts: number[] = []
    const receiver = createReceiver({
      secret: TEST_SECRET,
      store,
      storeTimeoutMs: 50,
      handlers: { 'email.bounced': (_event, ctx) => void attempts.push(ctx.attempt) },
    })
    const delivery = await createSignedDelivery({ type: 'email.bounced' })
    store.mode = 'hang'
    const started = Date.now()
    const down = await receiver.receive(delivery)
    expect(Date.now() - started).toBeGreaterThanOrEqual(45)
    expect(down).toMatchObject({ status: 503, code: 'store_unavailable' })
    expect(errorOf(down).message).toMatch(/storeTimeoutMs \(50 ms\)/)
    // A late answer gives the claim back (below), but one the store committed and never answered
    // would hold the event: the message says so, hedged.
    expect(errorOf(down).message).toMatch(
      /should the claim have reached the store all the same, the event stays claimed until its lease ends \(leaseMs\) unless a late answer gives it back/i,
    )
    expect(attempts).toEqual([])

    // The hung claim now goes through late; the receiver, which already answered 503, releases it.
    store.recover()
    await sleep(0)
    const retried = await receiver.receive(await redeliver(delivery))
    expect(retried).toMatchObject({ status: 200, body: OK })
    // Attempt 2: the late claim was acquired and released, not left to block retries for the lease.
    expect(attempts).toEqual([2])
    expect(store.claims).toBe(2)
  })
})

describe('createReceiver with a custom store whose release fails', () => {
  const releases: [string, (claim: Claim) => Promise<boolean>][] = [
    [
      'throws synchronously',
      () => {
        throw new Error('pool closed')
      },
    ],
    ['rejects', () => Promise.reject(new Error('pool closed'))],
  ]

  it.each(releases)('still answers 500 handler_failed when the handler throws and release %s', async (_name, release) => {
    const inner = new MemoryDedupStore()
    const store: DedupStore = {
      claim: (key, opts) => inner.claim(key, opts),
      complete: (claim, opts) => inner.complete(claim, opts),
      release,
    }
    const receiver = createReceiver({
      secret: TEST_SECRET,
      store,
      handlers: {
        'email.bounced': () => {
          throw new Error('handler broke')
        },
      },
    })
    const answer = await receiver.receive(await createSignedDelivery({ type: 'email.bounced' }))
    expect(answer).toMatchObject({ status: 500, code: 'handler_failed' })
  })
})

describe('createReceiver handler deadline (ctx.signal)', () => {
  it('aborts ctx.signal while the lease is still live (leaseMs 3000), answers handler_timeout, and runs the handler again on the retry', async () => {
    const store = new MemoryDedupStore()
    const seen: { attempt: number; abortedAfterMs?: number; leaseLiveAtAbort?: string; reason?: unknown }[] = []
    let receiveStarted = 0
    const receiver = createReceiver({
      secret: TEST_SECRET,
      store,
      // The handler deadline is 80% of it (2.4 s): 600 ms for the look at the lease after the abort, on a loaded machine.
      leaseMs: 3_000,
      handlers: {
        'email.bounced': async (event, ctx) => {
          const entry: (typeof seen)[number] = { attempt: ctx.attempt }
          seen.push(entry)
          if (ctx.attempt > 1) return
          await new Promise<void>((resolve) => {
            ctx.signal.addEventListener('abort', () => {
              entry.abortedAfterMs = Date.now() - receiveStarted
              entry.reason = ctx.signal.reason
              // Another worker's claim at this instant must still find the lease live.
              void store.claim(`default:${event.id}`, LONG).then((result) => {
                entry.leaseLiveAtAbort = result.status
                resolve()
              })
            })
          })
          throw ctx.signal.reason
        },
      },
    })
    const delivery = await createSignedDelivery({ type: 'email.bounced' })
    receiveStarted = Date.now()
    const answer = await receiver.receive(delivery)
    expect(answer.status).toBeGreaterThanOrEqual(400)
    expect(answer).toMatchObject({ code: 'handler_timeout', outcome: 'retry' })
    expect(errorOf(answer).code).toBe('handler_timeout')
    await sleep(0)
    expect(seen).toHaveLength(1)
    const first = seen[0]!
    expect(first.leaseLiveAtAbort).toBe('in_flight')
    // Before the lease ended: it started after receiveStarted.
    expect(first.abortedAfterMs).toBeLessThan(3_000)
    expect(first.reason).toBeInstanceOf(WebhookHandlingError)
    expect((first.reason as WebhookHandlingError).code).toBe('handler_timeout')

    const retried = await receiver.receive(await redeliver(delivery))
    expect(retried).toMatchObject({ status: 200, body: OK })
    expect(seen.map((entry) => entry.attempt)).toEqual([1, 2])
  })

  it('aborts ctx.signal before the lease ends even when the store answers the claim 1 s late', async () => {
    const inner = new MemoryDedupStore()
    // The lease starts when the store takes the claim; the answer reaches the receiver 1 s later,
    // more than the 600 ms between the handler deadline (2.4 s) and the end of the lease (3 s), so
    // a deadline counted from the answer would come after the lease ended.
    const slow: DedupStore = {
      claim: async (key, opts) => {
        const result = await inner.claim(key, opts)
        await sleep(1_000)
        return result
      },
      complete: (claim, opts) => inner.complete(claim, opts),
      release: (claim) => inner.release(claim),
    }
    let leaseAtAbort: string | undefined
    const receiver = createReceiver({
      secret: TEST_SECRET,
      store: slow,
      leaseMs: 3_000,
      // The late answer is no store timeout.
      storeTimeoutMs: 2_000,
      handlers: {
        'email.bounced': (event, ctx) =>
          new Promise<void>((_resolve, reject) => {
            ctx.signal.addEventListener('abort', () => {
              void inner.claim(`default:${event.id}`, LONG).then((result) => {
                leaseAtAbort = result.status
                reject(ctx.signal.reason)
              })
            })
          }),
      },
    })
    const answer = await receiver.receive(await createSignedDelivery({ type: 'email.bounced' }))
    expect(answer.code).toBe('handler_timeout')
    await sleep(0)
    expect(leaseAtAbort).toBe('in_flight')
  })

  it('aborts ctx.signal after handlerTimeoutMs when it is given', async () => {
    let abortedAfter = -1
    const receiver = createReceiver({
      secret: TEST_SECRET,
      store: new MemoryDedupStore(),
      leaseMs: 10_000,
      handlerTimeoutMs: 100,
      handlers: {
        'email.bounced': (_event, ctx) =>
          new Promise<void>((_resolve, reject) => {
            const started = Date.now()
            ctx.signal.addEventListener('abort', () => {
              abortedAfter = Date.now() - started
              reject(ctx.signal.reason)
            })
          }),
      },
    })
    const answer = await receiver.receive(await createSignedDelivery({ type: 'email.bounced' }))
    expect(answer.code).toBe('handler_timeout')
    // The 100 ms count from the claim; on a loaded machine the handler may start a few ms after it.
    // An abort at once (0 ms) still fails this.
    expect(abortedAfter).toBeGreaterThanOrEqual(50)
    expect(abortedAfter).toBeLessThan(10_000)
  })
})

describe('createReceiver onError', () => {
  it('receives typed errors and info that hold no secret, signature or body', async () => {
    const reports: [unknown, ErrorInfo][] = []
    const receiver = createReceiver({
      secret: TEST_SECRET,
      store: new MemoryDedupStore(),
      onError: (error, info) => void reports.push([error, info]),
      handlers: {
        'email.bounced': () => {
          throw new Error('handler broke')
        },
      },
    })
    const good = await createSignedDelivery({ type: 'email.bounced' })
    await receiver.receive({ ...good, body: good.body.replace('email.bounced', 'email.queued') })
    await receiver.receive(good)

    expect(reports).toHaveLength(2)
    const [[tampered, tamperedInfo], [failed, failedInfo]] = reports as [[unknown, ErrorInfo], [unknown, ErrorInfo]]
    expect(tampered).toBeInstanceOf(WebhookVerificationError)
    expect(tampered).toMatchObject({ code: 'signature_mismatch', status: 401 })
    expect(tamperedInfo).toEqual({ status: 401 })
    expect(failed).toBeInstanceOf(WebhookHandlingError)
    expect(failed).toMatchObject({ code: 'handler_failed', status: 500 })
    expect(failedInfo).toEqual({ status: 500, eventId: good.event.id, type: 'email.bounced' })
    for (const [error, info] of reports) {
      const text = `${(error as Error).message} ${JSON.stringify(info)}`
      expect(text).not.toContain(TEST_SECRET)
      expect(text).not.toContain(good.headers['webhook-signature'])
      expect(text).not.toContain(good.body)
      expect(text).not.toContain(good.event.data.id)
    }
  })

  it('keeps the answer unchanged when onError throws', async () => {
    let called = 0
    const receiver = createReceiver({
      secret: TEST_SECRET,
      store: new MemoryDedupStore(),
      onError: () => {
        called++
        throw new Error('logger down')
      },
      handlers: {
        'email.bounced': () => {
          throw new Error('handler broke')
        },
      },
    })
    const good = await createSignedDelivery({ type: 'email.bounced' })
    expect(await receiver.receive({ ...good, body: `${good.body} ` })).toMatchObject({ status: 401, code: 'signature_mismatch' })
    expect(await receiver.receive(good)).toMatchObject({ status: 500, code: 'handler_failed' })
    expect(called).toBe(2)
  })
})

describe('createReceiver options', () => {
  const bad: [string, Record<string, unknown>, RegExp][] = [
    ['an empty secret', { secret: '' }, /secret/i],
    ['a secret with surrounding white space', { secret: ` ${TEST_SECRET} ` }, /white ?space|spaces?/i],
    ['no secret', { secret: undefined }, /secret/i],
    ['a handler key that is not an email type', { handlers: { 'email.bouncd': () => {} } }, /"email\.bouncd" is not an email event type/],
    ['an unknown type as a handler key', { handlers: { [UNKNOWN_EVENT_TYPE]: () => {} } }, /onUnknown/],
    ['a handler that is not a function', { handlers: { 'email.bounced': 'markBounced' } }, /must be a function/],
    [
      'handlerTimeoutMs equal to leaseMs',
      { leaseMs: 600, handlerTimeoutMs: 600 },
      /handlerTimeoutMs \(600\) must be below leaseMs \(600\)/,
    ],
    ['handlerTimeoutMs above the default lease', { handlerTimeoutMs: 45_000 }, /must be below leaseMs/],
    ['a store without complete and release', { store: { claim: async () => ({ status: 'duplicate' }) } }, /store must implement/],
    ['a store that is a string', { store: 'sqlite' }, /store must implement/],
    ['a zero leaseMs', { leaseMs: 0 }, /leaseMs/],
    ['a NaN maxBodyBytes', { maxBodyBytes: Number.NaN }, /maxBodyBytes/],
    ['an onError that is not a function', { onError: 'console.error' }, /onError must be a function/],
    ['an empty namespace', { namespace: '' }, /namespace/],
    [
      'a leaseMs that is not whole milliseconds',
      { leaseMs: 1500.5 },
      /leaseMs must be a positive whole number of milliseconds, got 1500.5/,
    ],
    ['a retentionMs that is not whole milliseconds', { retentionMs: 86_400_000.25 }, /retentionMs must be a positive whole number/],
    ['a handlerTimeoutMs that is not whole milliseconds', { handlerTimeoutMs: 99.9 }, /handlerTimeoutMs must be a positive whole number/],
    ['a storeTimeoutMs that is not whole milliseconds', { storeTimeoutMs: 0.5 }, /storeTimeoutMs must be a positive whole number/],
    ['a maxBodyBytes that is not whole bytes', { maxBodyBytes: 1024.5 }, /maxBodyBytes must be a positive whole number of bytes/],
    ['a store named other than memory', { store: 'redis' }, /store must implement .* or be 'memory'/],
    ['a logger without warn', { logger: { error: () => {} } }, /logger must have error\(message\) and warn\(message\)/],
  ]

  it.each(bad)('throws a TypeError at createReceiver time for %s', (_name, options, message) => {
    const build = () => createReceiver({ secret: TEST_SECRET, store: new MemoryDedupStore(), ...options } as ReceiverOptions)
    expect(build).toThrow(TypeError)
    expect(build).toThrow(message)
  })

  it.each([
    ['skipstale', 'skipStale'],
    ['handlerTimeout', 'handlerTimeoutMs'],
    ['onerror', 'onError'],
    ['maxBodySize', 'maxBodyBytes'],
  ])('refuses an unknown option %s at createReceiver time, naming the nearest known one (%s)', (typo, nearest) => {
    const build = () => createReceiver({ secret: TEST_SECRET, store: new MemoryDedupStore(), [typo]: true } as ReceiverOptions)
    expect(build).toThrow(TypeError)
    expect(build).toThrow(new RegExp(`unknown option "${typo}": it would be ignored\\. Did you mean "${nearest}"\\?`))
  })

  it('names the event type a handler key was meant to be, and the SQLite default for store: "sqlite" or a file path', () => {
    expect(() =>
      createReceiver({ secret: TEST_SECRET, store: 'memory', handlers: { 'email.bounce': () => {} } } as ReceiverOptions),
    ).toThrow(/"email\.bounce" is not an email event type\. Did you mean "email\.bounced"\?/)
    expect(() => createReceiver({ secret: TEST_SECRET, store: 'sqlite' as 'memory' })).toThrow(/For the SQLite store, leave store out/)
    // A file path given as the store: the way to a SQLite file, not only "not a store".
    expect(() => createReceiver({ secret: TEST_SECRET, store: './x.db' as 'memory' })).toThrow(
      /A string is not a store \(a file path is not taken here\): for a SQLite file, leave store out: .*new SqliteDedupStore\(\{ path \}\) from '@email-webhooks\/core\/sqlite'/,
    )
  })

  it('refuses an option of a newer version without guessing a name for it', () => {
    const build = () => createReceiver({ secret: TEST_SECRET, store: new MemoryDedupStore(), telemetryExporter: {} } as ReceiverOptions)
    expect(build).toThrow(/unknown option "telemetryExporter": it would be ignored\. The options are /)
    expect(build).not.toThrow(/Did you mean/)
  })

  it("accepts store: 'memory' and logger: false", () => {
    expect(() => createReceiver({ secret: TEST_SECRET, store: 'memory', logger: false })).not.toThrow()
  })

  it('accepts the same options when they are valid', () => {
    expect(() =>
      createReceiver({
        secret: [TEST_SECRET, `${TEST_SECRET}-next`],
        store: new MemoryDedupStore(),
        leaseMs: 600,
        handlerTimeoutMs: 599,
        handlers: { 'email.bounced': () => {} },
      }),
    ).not.toThrow()
  })
})

describe('createReceiver default store', () => {
  const run = promisify(execFile)
  const child = join(here, 'default-store-child.mjs')

  interface ChildResult {
    answers: { status: number; body: string }[]
    handled: number
    backend: string
    error?: { name: string; code: string; message: string; isDedupStoreError: boolean }
    stderr: string
    stdout: string
  }

  async function runChild(
    deliveries: SignedDelivery[],
    env: Record<string, string>,
    nodeArgs: string[] = [],
    how: { prefix?: string[]; cwd?: string } = {},
  ): Promise<ChildResult> {
    const [command = process.execPath, ...args] = [...(how.prefix ?? []), process.execPath, ...nodeArgs, child]
    const { EMAIL_WEBHOOKS_DB: _inherited, ...parentEnv } = process.env
    const { stdout, stderr } = await run(command, args, {
      cwd: how.cwd ?? here,
      timeout: 20_000,
      env: { ...parentEnv, ...env, DELIVERIES: JSON.stringify(deliveries) },
    })
    return { ...(JSON.parse(stdout.trim().split('\n').at(-1) ?? '') as Omit<ChildResult, 'stderr' | 'stdout'>), stderr, stdout }
  }

  it('uses a SQLite file at EMAIL_WEBHOOKS_DB on Node, creating its folder, so a restarted process detects the duplicate', async () => {
    const path = join(dir, 'default-store', 'nested', 'dedup.db')
    const delivery = await createSignedDelivery({ type: 'email.bounced' })
    const first = await runChild([delivery], { EMAIL_WEBHOOKS_DB: path })
    expect(first.answers).toEqual([{ status: 200, body: OK }])
    expect(first.handled).toBe(1)
    expect(existsSync(path)).toBe(true)
    expect(first.stderr).not.toMatch(/not durable/i)

    const restarted = await runChild([await redeliver(delivery)], { EMAIL_WEBHOOKS_DB: path })
    expect(restarted.answers).toEqual([{ status: 200, body: DUPLICATE }])
    expect(restarted.handled).toBe(0)
  })

  function expectRefusedAtConstruction(result: ChildResult, path: string, osError: RegExp): void {
    // Thrown when the receiver is built: no delivery was answered, none with a non-durable 200.
    expect(result.answers).toBeUndefined()
    expect(result.stderr).not.toContain('built')
    // The class users import: the default store's bundle must not throw a copy of it.
    expect(result.error).toMatchObject({ name: 'DedupStoreError', code: 'misconfigured', isDedupStoreError: true })
    const message = result.error?.message ?? ''
    expect(message).toContain(path)
    expect(message).toMatch(osError)
    expect(message).toMatch(/EMAIL_WEBHOOKS_DB/)
    expect(message).toMatch(/store: 'memory'/)
  }

  it('refuses at construction, naming the path and the OS error, when a parent of the default path is a regular file', async () => {
    const file = join(dir, 'a-file-not-a-folder')
    writeFileSync(file, 'x')
    const path = join(file, 'dedup.db')
    const result = await runChild([await createSignedDelivery({ type: 'email.bounced' })], { EMAIL_WEBHOOKS_DB: path })
    expectRefusedAtConstruction(result, path, /ENOTDIR|EEXIST|not a directory/)
  })

  it('refuses at construction when the default SQLite file is corrupt (not a database)', async () => {
    const path = join(dir, 'corrupt', 'dedup.db')
    mkdirSync(dirname(path), { recursive: true })
    writeFileSync(path, Buffer.alloc(8192, 'this is not a SQLite database file. '))
    const result = await runChild([await createSignedDelivery({ type: 'email.bounced' })], { EMAIL_WEBHOOKS_DB: path })
    expectRefusedAtConstruction(result, path, /not a database|SQLITE_NOTADB|file is (encrypted|not a database)/i)
    // One piece of advice, not the SQLite store's and then the default store's own.
    expect(result.error?.message.match(/EMAIL_WEBHOOKS_DB/g)).toHaveLength(1)
    expect(result.error?.message).not.toContain('Fix:')
  })

  it('refuses at construction in one short message that gives its advice once, when EMAIL_WEBHOOKS_DB is a folder', async () => {
    const folder = join(dir, 'a-folder.db')
    mkdirSync(folder, { recursive: true })
    const result = await runChild([await createSignedDelivery({ type: 'email.bounced' })], { EMAIL_WEBHOOKS_DB: folder })
    expectRefusedAtConstruction(result, folder, /EISDIR/)
    const message = result.error?.message ?? ''
    expect(message).toContain(`it is a folder: give the path of a file, such as ${join(folder, 'dedup.db')}`)
    expect(message.match(/EMAIL_WEBHOOKS_DB/g)).toHaveLength(1)
    expect(message).not.toMatch(/Fix:|check that its folder exists|writable/)
    // About 400 characters (it was about 900, with the advice twice).
    expect(message.replaceAll(folder, 'PATH').length).toBeLessThan(450)
  })

  it('refuses at construction with driver_missing and the rebuild command when better-sqlite3 is installed but was never built', async () => {
    const path = join(dir, 'unbuilt-driver', 'dedup.db')
    const delivery = await createSignedDelivery({ type: 'email.bounced' })
    const result = await runChild([delivery], { EMAIL_WEBHOOKS_DB: path }, ['--require', join(here, 'unbuilt-sqlite-driver.cjs')])
    expect(result.answers).toBeUndefined()
    expect(result.error).toMatchObject({ name: 'DedupStoreError', code: 'driver_missing' })
    const message = result.error?.message ?? ''
    expect(message).toContain(path)
    expect(message).toMatch(/installed, but its native module was never built/)
    expect(message).toContain('npm rebuild better-sqlite3')
    expect(message).toContain('npm approve-scripts better-sqlite3')
    // Not the folder advice of an unwritable path, nor the 13 paths bindings tried, nor "install it" again.
    expect(message).not.toMatch(/writable|Tried:|npm install better-sqlite3/)
  })

  it('refuses at construction with driver_missing and the install command when better-sqlite3 cannot load', async () => {
    const path = join(dir, 'no-driver', 'dedup.db')
    const delivery = await createSignedDelivery({ type: 'email.bounced' })
    const result = await runChild([delivery], { EMAIL_WEBHOOKS_DB: path }, ['--require', join(here, 'no-sqlite-driver.cjs')])
    expect(result.answers).toBeUndefined()
    expect(result.error).toMatchObject({ name: 'DedupStoreError', code: 'driver_missing' })
    expect(result.error?.message).toContain(path)
    expect(result.error?.message).toContain('npm install better-sqlite3')
    expect(result.error?.message).toMatch(/Cannot find module 'better-sqlite3'/)
  })

  /** A folder this test's child process may not write to: mode 0555, and the child runs as `nobody` when the tests run as root (chmod does not deny root). */
  function unwritableFolder(name: string): string {
    const parent = mkdtempSync(join(tmpdir(), 'email-webhooks-unwritable-'))
    chmodSync(parent, 0o755)
    const folder = join(parent, name)
    mkdirSync(folder)
    chmodSync(folder, 0o555)
    return folder
  }
  const asUnprivileged = (): string[] => (process.getuid?.() === 0 ? ['runuser', '-u', 'nobody', '--'] : [])

  it('refuses at construction when the folder of the default file is not writable, naming the permission', async () => {
    const folder = unwritableFolder('read-only')
    const path = join(folder, 'dedup.db')
    const result = await runChild([await createSignedDelivery({ type: 'email.bounced' })], { EMAIL_WEBHOOKS_DB: path }, [], {
      prefix: asUnprivileged(),
    })
    expectRefusedAtConstruction(result, path, /permission denied|EACCES/i)
  })

  it('refuses at construction from a working folder it may not write, naming the folder and the cause once (not "no such file")', async () => {
    const folder = unwritableFolder('app')
    const result = await runChild([await createSignedDelivery({ type: 'email.bounced' })], {}, [], {
      prefix: asUnprivileged(),
      cwd: folder,
    })
    expect(result.answers).toBeUndefined()
    expect(result.error).toMatchObject({ name: 'DedupStoreError', code: 'misconfigured' })
    const message = result.error?.message ?? ''
    expect(message).toContain(`./.email-webhooks/dedup.db in the working folder ${folder}`)
    expect(message).toMatch(/this process may not write to .*app \(EACCES: permission denied\)/)
    expect(message).not.toMatch(/ENOENT|no such file/)
    expect(message.match(/EMAIL_WEBHOOKS_DB/g)).toHaveLength(1)
  })

  it('says once, through the logger, which SQLite file the default store uses, and whether it was just created', async () => {
    const path = join(dir, 'named', 'dedup.db')
    const first = await runChild([await createSignedDelivery({ type: 'email.bounced' })], { EMAIL_WEBHOOKS_DB: path })
    expect(first.answers).toEqual([{ status: 200, body: OK }])
    expect(first.stdout).toContain(
      `[@email-webhooks/core] dedup store: a new, empty SQLite file ${path} (created now: no event handled before is known) (from EMAIL_WEBHOOKS_DB).`,
    )
    expect(first.stdout.match(/dedup store: /g)).toHaveLength(1)
    // The next start finds the file: no "new, empty".
    const next = await runChild([await createSignedDelivery({ type: 'email.bounced' })], { EMAIL_WEBHOOKS_DB: path })
    expect(next.stdout).toContain(`[@email-webhooks/core] dedup store: the SQLite file ${path} (from EMAIL_WEBHOOKS_DB).`)
    expect(next.stdout.match(/dedup store: /g)).toHaveLength(1)
  })

  it("uses memory without a warning when the user opts in with store: 'memory'", async () => {
    const file = join(dir, 'opt-in-file')
    writeFileSync(file, 'x')
    const delivery = await createSignedDelivery({ type: 'email.bounced' })
    // The default path is broken, but it is not used.
    const result = await runChild([delivery, await redeliver(delivery)], { EMAIL_WEBHOOKS_DB: join(file, 'dedup.db'), STORE: 'memory' })
    expect(result.answers).toEqual([
      { status: 200, body: OK },
      { status: 200, body: DUPLICATE },
    ])
    expect(result.stderr).not.toMatch(/durable/i)
  })

  it('falls back to memory where SQLite is not the default (workerd condition) and warns exactly once, at construction, that dedup is not durable', async () => {
    const path = join(dir, 'workerd', 'dedup.db')
    const built = await runChild([], { EMAIL_WEBHOOKS_DB: path }, ['--conditions=workerd'])
    // No delivery at all: the warning comes from building the receiver, before it is used.
    const early = built.stderr.split('\n')
    const warning = early.findIndex((line) => /NOT durable/.test(line))
    expect(warning).toBeGreaterThan(-1)
    expect(warning).toBeLessThan(early.indexOf('built'))

    const a = await createSignedDelivery({ type: 'email.bounced' })
    const b = await createSignedDelivery({ type: 'email.bounced' })
    const result = await runChild([a, b, a], { EMAIL_WEBHOOKS_DB: path }, ['--conditions=workerd'])
    expect(result.backend).toBe('web')
    expect(result.answers).toEqual([
      { status: 200, body: OK },
      { status: 200, body: OK },
      { status: 200, body: DUPLICATE },
    ])
    expect(result.handled).toBe(2)
    const warnings = result.stderr.split('\n').filter((line) => line.includes('[@email-webhooks/core]'))
    expect(warnings).toHaveLength(1)
    expect(warnings[0]).toMatch(/NOT durable/)
    expect(warnings[0]).toMatch(/options\.store/)
    expect(existsSync(path)).toBe(false)
  })
})

describe("createReceiver defaults answer inside the sender's 10 s", () => {
  afterEach(() => {
    vi.useRealTimers()
  })

  /** Receives on fake timers; resolves with the answer and the fake milliseconds it took. */
  async function timed(receiver: ReturnType<typeof createReceiver>, delivery: SignedDelivery, stepMs = 100) {
    let answer: ReceiverResponse | undefined
    const started = performance.now()
    void receiver.receive(delivery).then((a) => {
      answer = a
    })
    while (!answer && performance.now() - started < 30_000) await vi.advanceTimersByTimeAsync(stepMs)
    return { answer: answer as ReceiverResponse, ms: performance.now() - started }
  }

  it('answers 503 handler_timeout after about 7 s to a handler that never returns, with the lease still held', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] })
    const store = new MemoryDedupStore()
    const receiver = createReceiver({ secret: TEST_SECRET, store, handlers: { 'email.bounced': () => new Promise(() => {}) } })
    const delivery = await createSignedDelivery({ type: 'email.bounced' })
    const { answer, ms } = await timed(receiver, delivery)
    expect(answer.code).toBe('handler_timeout')
    expect(ms).toBeGreaterThanOrEqual(6_900)
    expect(ms).toBeLessThan(7_000 + scaled(2_000))
    expect((await store.claim(`default:${delivery.event.id}`, LONG)).status).toBe('in_flight')
  })

  it('answers 503 store_unavailable before 9 s when the handler takes 6.9 s and the store then hangs on complete', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] })
    const inner = new MemoryDedupStore()
    const store: DedupStore = {
      claim: (key, opts) => inner.claim(key, opts),
      complete: () => new Promise(() => {}),
      release: (claim) => inner.release(claim),
    }
    const receiver = createReceiver({
      secret: TEST_SECRET,
      store,
      handlers: { 'email.bounced': () => new Promise((resolve) => setTimeout(resolve, 6_900)) },
    })
    const { answer, ms } = await timed(receiver, await createSignedDelivery({ type: 'email.bounced' }))
    expect(answer.code).toBe('store_unavailable')
    expect(ms).toBeGreaterThan(6_900)
    expect(ms).toBeLessThan(7_000 + scaled(2_000))
  })
})

describe('createReceiver with a handler past its deadline that ignores ctx.signal', () => {
  it('answers 503 at the deadline, answers 409 in_flight to a retry while the first run goes on, and records the late success', async () => {
    const hold = gate()
    let runs = 0
    const receiver = createReceiver({
      secret: TEST_SECRET,
      store: new MemoryDedupStore(),
      logger: false,
      handlerTimeoutMs: 100,
      handlers: {
        'email.bounced': async () => {
          runs++
          await hold.promise
        },
      },
    })
    const delivery = await createSignedDelivery({ type: 'email.bounced' })
    expect(await receiver.receive(delivery)).toMatchObject({ status: 503, code: 'handler_timeout' })
    const retry = await receiver.receive(await redeliver(delivery))
    expect(retry).toMatchObject({ status: 409, code: 'in_flight' })
    expect(runs).toBe(1)
    hold.open()
    await sleep(20)
    expect(await receiver.receive(await redeliver(delivery, 2))).toMatchObject({ status: 200, body: DUPLICATE })
    expect(runs).toBe(1)
  })

  it('releases the key when the late run finally throws, so the next retry runs it again', async () => {
    const hold = gate()
    const attempts: number[] = []
    const receiver = createReceiver({
      secret: TEST_SECRET,
      store: new MemoryDedupStore(),
      logger: false,
      handlerTimeoutMs: 100,
      handlers: {
        'email.bounced': async (_event, ctx) => {
          attempts.push(ctx.attempt)
          if (ctx.attempt > 1) return
          await hold.promise
          throw new Error('gave up late')
        },
      },
    })
    const delivery = await createSignedDelivery({ type: 'email.bounced' })
    expect(await receiver.receive(delivery)).toMatchObject({ status: 503, code: 'handler_timeout' })
    expect(await receiver.receive(await redeliver(delivery))).toMatchObject({ status: 409 })
    hold.open()
    await sleep(20)
    expect(await receiver.receive(await redeliver(delivery, 2))).toMatchObject({ status: 200, body: OK })
    expect(attempts).toEqual([1, 2])
  })
})

describe('createReceiver logs 5xx-class failures by default and counts refusals, warning once of a bad signature', () => {
  afterEach(() => {
    vi.restoreAllMocks()
  })

  it('writes one console.error line with the code, event type and id and the handler error, and nothing secret', async () => {
    const errors = vi.spyOn(console, 'error').mockImplementation(() => {})
    const warns = vi.spyOn(console, 'warn').mockImplementation(() => {})
    const receiver = createReceiver({
      secret: TEST_SECRET,
      store: new MemoryDedupStore(),
      handlers: {
        'email.bounced': () => {
          throw new Error('connection to billing-db refused')
        },
      },
    })
    const good = await createSignedDelivery({ type: 'email.bounced' })
    expect(await receiver.receive(good)).toMatchObject({ status: 500 })
    expect(errors).toHaveBeenCalledTimes(1)
    const line = String(errors.mock.calls[0]?.[0])
    expect(line).toContain('500 handler_failed')
    expect(line).toContain('email.bounced')
    expect(line).toContain(good.event.id)
    expect(line).toContain('connection to billing-db refused')
    // Where the handler threw: its first stack frame, in this file.
    expect(line).toMatch(/connection to billing-db refused \(at .*receiver\.test\.ts:\d+:\d+\)/)
    for (const secret of [TEST_SECRET, good.headers['webhook-signature'], good.body, good.event.data.id]) expect(line).not.toContain(secret)

    // Bad signatures are counted by code; one warning says what the refusals mean (here: one delivery
    // verified and others did not, so a body was changed on the way), without the event id,
    // signature or body.
    await receiver.receive({ ...good, body: `${good.body} ` })
    await receiver.receive({ ...good, body: `${good.body}  ` })
    await receiver.receive({ ...good, headers: { ...good.headers, 'webhook-signature': '' } })
    expect(errors).toHaveBeenCalledTimes(1)
    expect(warns).toHaveBeenCalledTimes(1)
    const warning = String(warns.mock.calls[0]?.[0])
    expect(warning).toMatch(/^\[@email-webhooks\/core\] 401 signature_mismatch: 1 of 2 deliveries/)
    expect(warning).toContain('the secret is right for most of them')
    for (const secret of [TEST_SECRET, good.headers['webhook-signature'], good.body, good.event.id]) expect(warning).not.toContain(secret)
    expect(receiver.stats()).toEqual({
      handled: 0,
      acknowledged: 0,
      duplicates: 0,
      ignored: 0,
      skipped: 0,
      queued: 0,
      dead: 0,
      rejected: { signature_mismatch: 2, malformed_signature: 1 },
      failed: { handler_failed: 1 },
      deliveries: { rejected: 3, failed: 1 },
    })
  })

  it('says once, with a different text, that the secret is likely wrong when every delivery so far was refused for its signature', async () => {
    const lines: string[] = []
    const receiver = createReceiver({
      secret: `${TEST_SECRET}-other`,
      store: new MemoryDedupStore(),
      logger: { error: (line) => void lines.push(line), warn: (line) => void lines.push(line) },
    })
    for (let i = 0; i < 3; i++) await receiver.receive(await createSignedDelivery({ type: 'email.bounced' }))
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatch(/If every delivery is refused, the secret is likely wrong .*if only some are, a proxy or body parser/)
  })

  it('warns when some deliveries verify and others do not (a re-encoding proxy), at most every 10 minutes', async () => {
    const lines: string[] = []
    const receiver = createReceiver({
      secret: TEST_SECRET,
      store: new MemoryDedupStore(),
      logger: { error: (line) => void lines.push(line), warn: (line) => void lines.push(line) },
    })
    const ok = await createSignedDelivery({ type: 'email.bounced' })
    expect((await receiver.receive(ok)).status).toBe(200)
    // A proxy turned "\u00e9" into "é" in some bodies: those fail, the others pass.
    const reencoded = await createSignedDelivery({ event: { ...(await createSignedDelivery({ type: 'email.bounced' })).event } })
    for (let i = 0; i < 3; i++) {
      const answer = await receiver.receive({ ...reencoded, body: `${reencoded.body}\n` })
      expect(answer.code).toBe('signature_mismatch')
    }
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatch(
      /^\[@email-webhooks\/core\] 401 signature_mismatch: 1 of 2 deliveries .* failed the signature check while the others passed it, so the secret is right for most of them/,
    )
    expect(lines[0]).toContain('email-webhooks verify')
    expect(receiver.stats().rejected).toEqual({ signature_mismatch: 3 })
  })

  it("warns once of a timestamp refusal with the measured offset: this server's clock may be off", async () => {
    const lines: string[] = []
    const receiver = createReceiver({
      secret: TEST_SECRET,
      store: new MemoryDedupStore(),
      // This server's clock runs 10 minutes fast.
      now: () => Date.now() + 600_000,
      logger: { error: (line) => void lines.push(line), warn: (line) => void lines.push(line) },
    })
    for (let i = 0; i < 3; i++) {
      const answer = await receiver.receive(await createSignedDelivery({ type: 'email.bounced' }))
      expect(answer.code).toBe('timestamp_too_old')
    }
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatch(
      /401 timestamp_too_old: .* The delivery's timestamp was (599|600|601) s behind this server's clock \(this clock may be fast\)\. .*check NTP/,
    )
    expect(receiver.stats().rejected).toEqual({ timestamp_too_old: 3 })
  })

  it('counts handled (a handler ran) apart from acknowledged (recorded, no handler for the type)', async () => {
    const noHandlers = createReceiver({
      secret: TEST_SECRET,
      store: new MemoryDedupStore(),
      logger: false,
      handlers: { 'email.bounced': () => {} },
    })
    await noHandlers.receive(await createSignedDelivery({ type: 'email.bounced' }))
    await noHandlers.receive(await createSignedDelivery({ type: 'email.queued' }))
    await noHandlers.receive(await createSignedDelivery({ type: UNKNOWN_EVENT_TYPE }))
    expect(noHandlers.stats()).toMatchObject({ handled: 1, acknowledged: 2 })
    const withUnknown = createReceiver({ secret: TEST_SECRET, store: new MemoryDedupStore(), logger: false, onUnknown: () => {} })
    await withUnknown.receive(await createSignedDelivery({ type: UNKNOWN_EVENT_TYPE }))
    await withUnknown.receive(await createSignedDelivery({ type: 'email.queued' }))
    expect(withUnknown.stats()).toMatchObject({ handled: 1, acknowledged: 1 })
    const withOnEvent = createReceiver({ secret: TEST_SECRET, store: new MemoryDedupStore(), logger: false, onEvent: () => {} })
    await withOnEvent.receive(await createSignedDelivery({ type: 'email.queued' }))
    expect(withOnEvent.stats()).toMatchObject({ handled: 1, acknowledged: 0 })
  })

  it('logs through the logger option instead, and not at all when onError is given', async () => {
    const lines: string[] = []
    const errors = vi.spyOn(console, 'error').mockImplementation(() => {})
    const failing = { 'email.bounced': () => Promise.reject(new Error('boom')) }
    const logged = createReceiver({
      secret: TEST_SECRET,
      store: new MemoryDedupStore(),
      logger: { error: (line) => void lines.push(line), warn: (line) => void lines.push(line) },
      handlers: failing,
    })
    await logged.receive(await createSignedDelivery({ type: 'email.bounced' }))
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatch(/500 handler_failed email\.bounced .* boom/)

    const seen: string[] = []
    const observed = createReceiver({
      secret: TEST_SECRET,
      store: new MemoryDedupStore(),
      onError: (error) => void seen.push(error.code),
      handlers: failing,
    })
    await observed.receive(await createSignedDelivery({ type: 'email.bounced' }))
    expect(seen).toEqual(['handler_failed'])
    expect(errors).not.toHaveBeenCalled()
  })
})
