/**
 * recoverEndpoint() against the faithful sender and the core receiver: what it skips (handled
 * in the store, delivered, same event twice), what it reports (expired, failed, request ids),
 * dry runs that change nothing, unknown endpoints, and bounded concurrency with spacing.
 */
import { emailWebhook, MemoryDedupStore } from '@email-webhooks/core'
import { createWebhooksClient, EmailApiError, recoverEndpoint } from '@email-webhooks/core/api'
import { createFaithfulSender, type FaithfulSenderOptions, TEST_API_KEY } from '@email-webhooks/core/testing'
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

describe('recoverEndpoint', () => {
  it('skips an event the store holds as done although the sender saw a timeout, and retries it without lookup', async () => {
    const { sender, store, client, runs, endpointId } = setup({
      senderOptions: { receiverTimeoutMs: 100, maxAttempts: 1 },
      handlerDelayMs: 300,
    })
    const { event, deliveries } = sender.emit({ type: 'email.bounced' })
    await sender.idle()
    await new Promise((resolve) => setTimeout(resolve, 400))
    expect(sender.deliveries(endpointId)[0]).toMatchObject({ state: 'failed', last_status: null })
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
    const { sender, store, client, endpointId, setBroken } = setup()
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
          state: 'failed',
          attempts: 10,
          last_status: 500,
          next_attempt_at: null,
        })),
        requestId: 'r1',
      }),
      retryDelivery: async () => ({ ok: true as const, requestId: 'r2' }),
    }
    const report = await recoverEndpoint({ client: fake, endpointId: 'e1', spacingMs: 0 })
    expect(report.retried).toEqual([{ deliveryId: 'd1', eventId, requestId: 'r2' }])
    expect(report.alreadyHandled).toEqual([{ deliveryId: 'd2', eventId, requestId: 'r1', reason: 'same_event' }])
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
