/**
 * recoverEndpoint() against the faithful sender and the core receiver: what it skips (handled
 * in the store, delivered, same event twice), what it reports (expired, failed, request ids),
 * dry runs that change nothing, unknown endpoints, and bounded concurrency with spacing.
 */
import { DEFAULT_NAMESPACE, emailWebhook, MemoryDedupStore } from '@email-webhooks/core'
import {
  createWebhooksClient,
  EmailApiError,
  RecoveryAbortedError,
  recoverEndpoint,
  type WebhookDelivery,
  type WebhooksClient,
} from '@email-webhooks/core/api'
import {
  createFaithfulSender,
  type FaithfulSender,
  type FaithfulSenderOptions,
  TEST_API_KEY,
  TEST_SECRET,
} from '@email-webhooks/core/testing'
import { afterEach, describe, expect, it } from 'vitest'

const closers: Array<() => unknown> = []
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close()
})

/** A sender whose deliveries go in-process to the core receiver (web handler), with the API behind `apiFetch`. */
function setup(
  options: {
    senderOptions?: FaithfulSenderOptions
    handlerDelayMs?: number
    namespace?: string
    apiFetch?: (request: Request, next: (r: Request) => Promise<Response>) => Promise<Response>
  } = {},
) {
  const store = new MemoryDedupStore()
  const runs = new Map<string, number>()
  let broken = false
  let secret = ''
  let handler: ((request: Request) => Promise<Response>) | undefined
  const sender = createFaithfulSender({
    timeScale: 0.0005,
    ...options.senderOptions,
    fetch: async (input, init) => {
      handler ??= emailWebhook(
        secret,
        {
          'email.bounced': async (event) => {
            if (broken) throw new Error('down (simulated)')
            if (options.handlerDelayMs) await new Promise((resolve) => setTimeout(resolve, options.handlerDelayMs))
            runs.set(event.id, (runs.get(event.id) ?? 0) + 1)
          },
        },
        { store, ...(options.namespace ? { namespace: options.namespace } : {}) },
      )
      return handler(new Request(input, init))
    },
  })
  closers.push(() => sender.close())
  const endpoint = sender.createEndpoint('https://hooks.example.com/email')
  secret = endpoint.secret
  const next = (r: Request) => sender.fetch(r)
  const client = createWebhooksClient({
    apiKey: TEST_API_KEY,
    baseUrl: 'https://api.sender.test/v1',
    backoffBaseMs: 1,
    fetch: (input, init) => (options.apiFetch ? options.apiFetch(new Request(input, init), next) : next(new Request(input, init))),
  })
  return {
    sender,
    store,
    client,
    runs,
    endpointId: endpoint.id,
    setBroken: (b: boolean) => {
      broken = b
    },
  }
}

/** A client whose endpoint `e1` is enabled and lists `deliveries` (newest first); retries are recorded in `retried`. */
function fakeClient(deliveries: WebhookDelivery[], retried: string[]): WebhooksClient {
  const { client } = setup()
  return {
    ...client,
    listEndpoints: async () => ({
      endpoints: [{ id: 'e1', url: 'https://x.example/h', enabled: true, failures: 0, created_at: '' }],
      requestId: 'r0',
    }),
    listDeliveries: async () => ({ deliveries, requestId: 'r1' }),
    retryDelivery: async (_endpointId: string, deliveryId: string) => {
      retried.push(deliveryId)
      return { ok: true as const, requestId: 'r2' }
    },
  }
}

describe('recoverEndpoint', () => {
  it('skips an event the store holds as done although the sender saw a timeout, and retries it without lookup', async () => {
    const { sender, store, client, runs, endpointId } = setup({
      senderOptions: { receiverTimeoutMs: 100, maxAttempts: 1 },
      handlerDelayMs: 300,
    })
    const { event, deliveries } = sender.emit({ type: 'email.bounced' })
    await sender.idle()
    await new Promise((resolve) => setTimeout(resolve, 400))
    expect(sender.deliveries(endpointId)[0]).toMatchObject({ attempts: 1, last_status: null })
    const report = await recoverEndpoint({ client, endpointId, store, spacingMs: 0 })
    expect(report.alreadyHandled).toEqual([
      { deliveryId: deliveries[0]?.id, eventId: event.id, requestId: report.listRequestId, reason: 'store' },
    ])
    expect(report.retried).toEqual([])
    const blind = await recoverEndpoint({ client, endpointId, spacingMs: 0 })
    expect(blind.retried.map((r) => r.eventId)).toEqual([event.id])
    await sender.idle()
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect(runs.get(event.id)).toBe(1)
  })

  it('looks events up under the given namespace', async () => {
    const { sender, store, client, endpointId } = setup({
      senderOptions: { receiverTimeoutMs: 100, maxAttempts: 1 },
      handlerDelayMs: 300,
      namespace: 'shop',
    })
    sender.emit({ type: 'email.bounced' })
    await sender.idle()
    await new Promise((resolve) => setTimeout(resolve, 400))
    expect((await recoverEndpoint({ client, endpointId, store, dryRun: true })).retried).toHaveLength(1)
    expect(
      (await recoverEndpoint({ client, endpointId, store, namespace: 'shop', dryRun: true })).alreadyHandled.map((h) => h.reason),
    ).toEqual(['store'])
  })

  it('in a dry run reports what it would do and sends no PATCH and no retry', async () => {
    // One attempt each: the three deliveries fail, and the third failure disables the endpoint.
    const { sender, store, client, endpointId, setBroken } = setup({ senderOptions: { maxAttempts: 1, disableAfter: 3 } })
    setBroken(true)
    for (let i = 0; i < 3; i++) sender.emit({ type: 'email.bounced' })
    await sender.idle()
    expect(sender.endpoint(endpointId)?.enabled).toBe(false)
    const before = sender.apiRequests.length
    const report = await recoverEndpoint({ client, endpointId, store, dryRun: true })
    expect([report.dryRun, report.enable, report.enableRequestId, report.retried.length]).toEqual([true, 'would_reenable', undefined, 3])
    expect(sender.apiRequests.slice(before).map((r) => r.method)).toEqual(['GET', 'GET'])
    expect(sender.endpoint(endpointId)?.enabled).toBe(false)
  })

  it('reports expired payloads (404 delivery_expired) and other failures with their request ids', async () => {
    let clock = Date.now()
    const failing = new Set<string>()
    const { sender, store, client, endpointId, setBroken } = setup({
      senderOptions: { now: () => clock, payloadLifetimeMs: 60_000, maxAttempts: 1 },
      apiFetch: async (request, next) => {
        const body = request.method === 'POST' ? ((await request.clone().json()) as { deliveryId?: string }) : {}
        if (body.deliveryId && failing.has(body.deliveryId)) {
          return Response.json(
            { error: { code: 'key_owner_unavailable', message: 'no', requestId: 'req-failed' } },
            { status: 403, headers: { 'x-request-id': 'req-failed' } },
          )
        }
        return next(request)
      },
    })
    setBroken(true)
    const old = sender.emit({ type: 'email.bounced' })
    await sender.idle()
    clock += 61_000
    const fresh = sender.emit({ type: 'email.bounced' })
    const refused = sender.emit({ type: 'email.bounced' })
    failing.add(refused.deliveries[0]?.id as string)
    await sender.idle()
    setBroken(false)
    const report = await recoverEndpoint({ client, endpointId, store, spacingMs: 0 })
    expect(report.expired).toEqual([
      { deliveryId: old.deliveries[0]?.id, eventId: old.event.id, requestId: expect.stringMatching(/^[0-9a-f-]{36}$/) },
    ])
    expect(report.retried.map((r) => r.eventId)).toEqual([fresh.event.id])
    expect(report.failed).toEqual([
      {
        deliveryId: refused.deliveries[0]?.id,
        eventId: refused.event.id,
        requestId: 'req-failed',
        status: 403,
        code: 'key_owner_unavailable',
        message: expect.stringContaining('key_owner_unavailable'),
      },
    ])
  })

  it('retries one delivery per event when the list holds the same event twice', async () => {
    const { client } = setup()
    const eventId = crypto.randomUUID()
    const fake = {
      ...client,
      listEndpoints: async () => ({
        endpoints: [{ id: 'e1', url: 'https://x.example/h', enabled: true, failures: 0, created_at: '' }],
        requestId: 'r0',
      }),
      listDeliveries: async () => ({
        deliveries: ['d1', 'd2'].map((id) => ({
          id,
          event_id: eventId,
          state: 'pending',
          attempts: 10,
          last_status: 500,
          next_attempt_at: null,
        })),
        requestId: 'r1',
      }),
      retryDelivery: async () => ({ ok: true as const, requestId: 'r2' }),
    }
    const report = await recoverEndpoint({ client: fake, endpointId: 'e1', spacingMs: 0 })
    // The list is newest first: d2 is the older record, retried first.
    expect(report.retried).toEqual([{ deliveryId: 'd2', eventId, requestId: 'r2' }])
    expect(report.alreadyHandled).toEqual([{ deliveryId: 'd1', eventId, requestId: 'r1', reason: 'same_event' }])
  })

  it('retries every delivery neither delivered nor handled, whatever its undocumented state says, one record per event', async () => {
    const [a, b, c, d] = [crypto.randomUUID(), crypto.randomUUID(), crypto.randomUUID(), crypto.randomUUID()]
    const record = (id: string, event_id: string, state: string, last_status: number | null) => ({
      id,
      event_id,
      state,
      attempts: 10,
      last_status,
      next_attempt_at: null,
    })
    const retried: string[] = []
    const fake = fakeClient(
      [
        record('d5', d, 'whatever-new', 200),
        record('d4', c, 'failed', 500),
        record('d3', a, 'failed', 503),
        record('d2', b, 'delivering', 503),
        record('d1', a, 'pending', 503),
      ],
      retried,
    )
    const report = await recoverEndpoint({ client: fake, endpointId: 'e1', spacingMs: 0 })
    // Oldest first: d1 (a), d2 (b), d4 (c); d3 is a second record of a; d5 was delivered (a 2xx).
    expect(retried).toEqual(['d1', 'd2', 'd4'])
    expect(report.alreadyHandled).toEqual([
      { deliveryId: 'd5', eventId: d, requestId: 'r1', reason: 'delivered' },
      { deliveryId: 'd3', eventId: a, requestId: 'r1', reason: 'same_event' },
    ])
  })

  it('retries exhausted deliveries a sender reports as pending: all five handled once (the documented fields decide, not the state)', async () => {
    // Only documented states: every record says pending, as the service's example does.
    const { sender, store, client, runs, endpointId, setBroken } = setup({ senderOptions: { disableAfter: 1_000 } })
    setBroken(true)
    const events = Array.from({ length: 5 }, () => sender.emit({ type: 'email.bounced' }).event)
    await sender.idle()
    const records = sender.deliveries(endpointId)
    expect(records.map((r) => [r.state, r.attempts, r.last_status, r.next_attempt_at])).toEqual(
      records.map(() => ['pending', 10, 500, null]),
    )
    setBroken(false)
    const report = await recoverEndpoint({ client, endpointId, store, spacingMs: 0 })
    expect(report.retried.map((r) => r.eventId).sort()).toEqual(events.map((e) => e.id).sort())
    await sender.idle()
    expect(events.map((e) => runs.get(e.id))).toEqual([1, 1, 1, 1, 1])
  })

  it('retries the deliveries a disable paused too, and says when the sender has its own attempt due: each event handled once', async () => {
    const { sender, store, client, runs, endpointId, setBroken } = setup({
      senderOptions: { disableAfter: 3 },
      handlerDelayMs: 300,
    })
    setBroken(true)
    const events = [sender.emit({ type: 'email.bounced' }).event, sender.emit({ type: 'email.bounced' }).event]
    await sender.idle()
    expect(sender.endpoint(endpointId)?.enabled).toBe(false)
    setBroken(false)
    const report = await recoverEndpoint({ client, endpointId, store, spacingMs: 0 })
    expect([report.enable, report.failed]).toEqual(['reenabled', []])
    // Retried by hand whatever the sender resumes by itself: whichever comes second is a duplicate.
    expect(report.retried.map((d) => d.eventId).sort()).toEqual(events.map((e) => e.id).sort())
    await sender.idle()
    await new Promise((resolve) => setTimeout(resolve, 400))
    expect(events.map((e) => runs.get(e.id))).toEqual([1, 1])
  })

  it("reports the sender's own next attempt when the record shows one still to come (attempts below 10, next_attempt_at ahead)", async () => {
    const soon = new Date(Date.now() + 60_000).toISOString()
    const past = new Date(Date.now() - 60_000).toISOString()
    const record = (id: string, attempts: number, next_attempt_at: string | null) => ({
      id,
      event_id: crypto.randomUUID(),
      state: 'pending',
      attempts,
      last_status: 503,
      next_attempt_at,
    })
    const retried: string[] = []
    const fake = fakeClient([record('d4', 10, soon), record('d3', 3, past), record('d2', 3, null), record('d1', 3, soon)], retried)
    const report = await recoverEndpoint({ client: fake, endpointId: 'e1', spacingMs: 0 })
    expect(retried).toEqual(['d1', 'd2', 'd3', 'd4'])
    expect(report.retried.map((r) => [r.deliveryId, r.senderNext])).toEqual([
      ['d1', { attempt: 4, at: soon }],
      ['d2', undefined],
      ['d3', undefined],
      ['d4', undefined],
    ])
  })

  it("retries the oldest delivery first, so with ordering on none of an email's events arrives stale", async () => {
    const emailId = crypto.randomUUID()
    const start = Date.now()
    const types = ['email.queued', 'email.submitted', 'email.deferred', 'email.submitted'] as const
    const handled: string[] = []
    const stale: string[] = []
    let broken = true
    let sender: FaithfulSender | undefined
    const receiver = emailWebhook(
      TEST_SECRET,
      {},
      {
        store: new MemoryDedupStore(),
        ordering: true,
        skipStale: true,
        onEvent: (event) => {
          if (broken) throw new Error('down (simulated)')
          handled.push(event.id)
        },
        onStale: (event) => void stale.push(event.id),
        logger: false,
      },
    )
    sender = createFaithfulSender({
      timeScale: 0.0005,
      maxAttempts: 1,
      disableAfter: 100,
      fetch: (input, init) => receiver(new Request(input, init)),
    })
    closers.push(() => sender?.close())
    const { id: endpointId } = sender.createEndpoint('https://hooks.example.com/email', { secret: TEST_SECRET })
    const ids = types.map((type, i) => {
      const event = { id: crypto.randomUUID(), type, created_at: new Date(start + i * 1000).toISOString(), data: { id: emailId } }
      return sender?.emit({ event }).event.id as string
    })
    await sender.idle()
    broken = false
    const client = createWebhooksClient({
      apiKey: TEST_API_KEY,
      baseUrl: 'https://api.sender.test/v1',
      // Each retry answers once its delivery was handled, so the deliveries arrive in the order of the retries.
      fetch: async (input, init) => {
        const answer = await sender?.fetch(new Request(input, init))
        await sender?.idle()
        return answer as Response
      },
    })
    const report = await recoverEndpoint({ client, endpointId, concurrency: 1, spacingMs: 0 })
    expect(report.retried.map((r) => r.eventId)).toEqual(ids)
    expect([handled, stale]).toEqual([ids, []])
  })

  it("orders retries by the records' created_at when the list gives one for every record", async () => {
    const record = (id: string, at: string) => ({
      id,
      event_id: `ev-${id}`,
      state: 'failed',
      attempts: 10,
      last_status: 500,
      next_attempt_at: null,
      created_at: at,
    })
    const retried: string[] = []
    const fake = fakeClient(
      [record('d1', '2026-01-01T00:00:02Z'), record('d2', '2026-01-01T00:00:03Z'), record('d3', '2026-01-01T00:00:01Z')],
      retried,
    )
    await recoverEndpoint({ client: fake, endpointId: 'e1', spacingMs: 0, concurrency: 1 })
    expect(retried).toEqual(['d3', 'd1', 'd2'])
  })

  it('stops at an abort: no retry starts after it, and it rejects with RecoveryAbortedError and the report of what was done', async () => {
    const starts: number[] = []
    const { sender, store, client, endpointId, setBroken } = setup({
      senderOptions: { maxAttempts: 1, disableAfter: 100 },
      apiFetch: async (request, next) => {
        if (request.url.endsWith('/retry')) starts.push(performance.now())
        return next(request)
      },
    })
    setBroken(true)
    for (let i = 0; i < 8; i++) sender.emit({ type: 'email.bounced' })
    await sender.idle()
    setBroken(false)
    const controller = new AbortController()
    let abortedAt = Number.POSITIVE_INFINITY
    setTimeout(() => {
      abortedAt = performance.now()
      controller.abort(new Error('stopped by the test'))
    }, 150)
    const error = await recoverEndpoint({ client, endpointId, store, concurrency: 2, spacingMs: 100, signal: controller.signal }).catch(
      (e: unknown) => e,
    )
    await new Promise((resolve) => setTimeout(resolve, 300))
    expect(starts.filter((t) => t >= abortedAt)).toEqual([])
    expect(starts.length).toBeLessThanOrEqual(2)
    expect(error).toBeInstanceOf(RecoveryAbortedError)
    const { code, report, cause } = error as RecoveryAbortedError
    expect([code, (cause as Error).message]).toEqual(['recovery_aborted', 'stopped by the test'])
    expect(report?.aborted).toBe(true)
    expect((report?.retried.length ?? 0) + (report?.interrupted.length ?? 0)).toBe(starts.length)
    expect((report?.retried.length ?? 0) + (report?.interrupted.length ?? 0) + (report?.notStarted.length ?? 0)).toBe(8)
    expect((error as Error).message).toMatch(/was aborted: \d+ deliveries requeued, \d+ not started/)
  })

  it('sends nothing when the signal is already aborted', async () => {
    const { sender, client, endpointId } = setup()
    const before = sender.apiRequests.length
    const error = await recoverEndpoint({ client, endpointId, signal: AbortSignal.abort() }).catch((e: unknown) => e)
    expect(sender.apiRequests.length).toBe(before)
    expect(error).toBeInstanceOf(RecoveryAbortedError)
    expect((error as RecoveryAbortedError).report).toBeUndefined()
    expect((error as Error).message).toContain('nothing was changed')
  })

  it("looks events up under the receiver's default namespace (DEFAULT_NAMESPACE) when none is given", async () => {
    const store = new MemoryDedupStore()
    const eventId = crypto.randomUUID()
    const claim = await store.claim(`${DEFAULT_NAMESPACE}:${eventId}`, { leaseMs: 60_000, retentionMs: 60_000 })
    if (claim.status === 'acquired') await store.complete(claim.claim, { retentionMs: 60_000 })
    const record = { id: 'd1', event_id: eventId, state: 'failed', attempts: 10, last_status: 500, next_attempt_at: null }
    const report = await recoverEndpoint({ client: fakeClient([record], []), endpointId: 'e1', store, spacingMs: 0 })
    expect(report.alreadyHandled.map((h) => h.reason)).toEqual(['store'])
  })

  it('says so when the endpoint does not exist', async () => {
    const { client } = setup()
    const id = crypto.randomUUID()
    const error = await recoverEndpoint({ client, endpointId: id }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(EmailApiError)
    expect([(error as EmailApiError).status, (error as EmailApiError).code]).toEqual([404, 'not_found'])
    expect((error as EmailApiError).message).toContain(`no webhook endpoint with id ${id}`)
  })

  it('keeps at most `concurrency` retries in flight, their starts `spacingMs` apart', async () => {
    let inFlight = 0
    let most = 0
    const starts: number[] = []
    let listed = Number.POSITIVE_INFINITY
    const { sender, store, client, endpointId, setBroken } = setup({
      senderOptions: { maxAttempts: 1, disableAfter: 100 },
      apiFetch: async (request, next) => {
        if (!request.url.endsWith('/retry')) {
          const answer = await next(request)
          if (new URL(request.url).pathname.endsWith('/deliveries')) listed = performance.now()
          return answer
        }
        starts.push(performance.now())
        most = Math.max(most, ++inFlight)
        await new Promise((resolve) => setTimeout(resolve, 60))
        inFlight--
        return next(request)
      },
    })
    setBroken(true)
    for (let i = 0; i < 8; i++) sender.emit({ type: 'email.bounced' })
    await sender.idle()
    setBroken(false)
    const report = await recoverEndpoint({ client, endpointId, store, concurrency: 2, spacingMs: 20 })
    expect(report.retried).toHaveLength(8)
    expect(most).toBe(2)
    // The gate marks the i-th start at least 20·i ms after the first mark, which comes after the
    // delivery list arrived (`listed`); each retry is observed here after its mark, however late.
    // So the i-th observed start is at least 20·i ms after `listed`, on any machine, with no slack.
    // Without spacing, the first two would start together right after the list and fail at i = 1.
    expect(starts).toHaveLength(8)
    for (let i = 0; i < starts.length; i++) expect((starts[i] as number) - listed).toBeGreaterThanOrEqual(20 * i)
  })
})
