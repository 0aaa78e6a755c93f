/**
 * OpenTelemetry through `@opentelemetry/api`, recorded with the SDK's in-memory span exporter and a
 * metric reader: each outcome's span and counter, the child spans, the handler running inside its
 * span's context, the sender's `traceparent` linked and never made the parent, errors recorded
 * without secrets or bodies, the inbox's gauges, and stats().deliveries under the same names.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { createReceiver, type DedupStore, MemoryDedupStore, type ReceiverOptions } from '@email-webhooks/core'
import { createEmailSequence, createSignedDelivery, type SignedDelivery, TEST_SECRET } from '@email-webhooks/core/testing'
import { context, metrics, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api'
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks'
import { MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics'
import { BasicTracerProvider, InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'

class TestReader extends MetricReader {
  protected async onShutdown(): Promise<void> {}
  protected async onForceFlush(): Promise<void> {}
}

const exporter = new InMemorySpanExporter()
const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
let reader: TestReader
let meterProvider: MeterProvider

beforeAll(() => {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable())
})
afterAll(() => {
  context.disable()
})
beforeEach(() => {
  exporter.reset()
  reader = new TestReader()
  meterProvider = new MeterProvider({ readers: [reader] })
})

type Point = { attributes: Record<string, unknown>; value: unknown }
/** The data points of metric `name` from a fresh collection. */
async function points(name: string): Promise<Point[]> {
  const { resourceMetrics } = await reader.collect()
  const found = resourceMetrics.scopeMetrics.flatMap((scope) => scope.metrics).find((metric) => metric.descriptor.name === name)
  return (found?.dataPoints ?? []) as Point[]
}
const sumBy = (list: Point[], key: string) =>
  Object.fromEntries(list.map((point) => [String(point.attributes[key]), point.value as number]))

function receiver(options: Partial<ReceiverOptions> = {}) {
  return createReceiver({
    secret: TEST_SECRET,
    store: new MemoryDedupStore(),
    logger: false,
    telemetry: { tracerProvider, meterProvider },
    ...options,
  })
}
const spans = (name?: string) => exporter.getFinishedSpans().filter((span) => name === undefined || span.name === name)
const roots = () => spans('email-webhooks receive')
const childrenOf = (root: ReadableSpan) => spans().filter((span) => span.parentSpanContext?.spanId === root.spanContext().spanId)
const send = (r: ReturnType<typeof receiver>, d: SignedDelivery, headers: Record<string, string> = {}) =>
  r.receive({ headers: { ...d.headers, ...headers }, body: d.body })

describe('OpenTelemetry spans and metrics', () => {
  it('gives a handled delivery a server span with its outcome, event, attempt and order status, and child spans for each step', async () => {
    const r = receiver({ handlers: { 'email.bounced': () => {} } })
    const delivery = await createSignedDelivery({ type: 'email.bounced' })
    expect((await send(r, delivery)).status).toBe(200)
    const [root] = roots()
    expect(root?.kind).toBe(SpanKind.SERVER)
    expect(root?.attributes).toMatchObject({
      'email_webhooks.outcome': 'handled',
      'http.response.status_code': 200,
      'email_webhooks.event.type': 'email.bounced',
      'email_webhooks.event.id': delivery.event.id,
      'messaging.message.id': delivery.event.id,
      'email_webhooks.attempt': 1,
      'email_webhooks.order.status': 'unknown',
      'email_webhooks.store': 'MemoryDedupStore',
      'email_webhooks.mode': 'request',
    })
    expect(root?.status.code).toBe(SpanStatusCode.UNSET)
    const names = childrenOf(root as ReadableSpan).map((span) => span.name)
    expect(names).toEqual(['email-webhooks verify', 'email-webhooks claim', 'email-webhooks handler', 'email-webhooks complete'])
    const store = await points('email_webhooks.store.duration')
    expect(store.map((p) => p.attributes['email_webhooks.store.step']).sort()).toEqual(['claim', 'complete'])
    const handler = await points('email_webhooks.handler.duration')
    expect(handler).toHaveLength(1)
    expect(handler[0]?.attributes).toEqual({ 'email_webhooks.event.type': 'email.bounced', 'email_webhooks.handler.result': 'ok' })
    expect(handler[0]?.value).toMatchObject({ count: 1 })
    expect((await points('email_webhooks.handlers.active')).map((p) => p.value)).toEqual([0])
  })

  it('gives every outcome its span and counter, and stats().deliveries the same names', async () => {
    let failOnce = true
    let release = () => {}
    const r = receiver({
      ordering: true,
      skipStale: true,
      // A copy waits for its email at most half of this before its 409.
      handlerTimeoutMs: 400,
      handlers: {
        'email.bounced': () => {
          if (failOnce) {
            failOnce = false
            throw new Error('database down')
          }
        },
        'email.complained': () =>
          new Promise<void>((resolve) => {
            release = resolve
          }),
        'email.queued': () => {},
        'email.submitted': () => {},
      },
    })
    const bounced = await createSignedDelivery({ type: 'email.bounced' })
    expect((await send(r, bounced)).status).toBe(500) // failed
    expect((await send(r, bounced)).status).toBe(200) // handled
    expect((await send(r, bounced)).outcome).toBe('duplicate')
    const complained = await createSignedDelivery({ type: 'email.complained' })
    const first = send(r, complained)
    await new Promise((resolve) => setTimeout(resolve, 20))
    expect((await send(r, complained)).status).toBe(409) // in_flight
    release()
    expect((await first).status).toBe(200)
    const bad = await createSignedDelivery({ type: 'email.bounced', secret: 'whsec_another_secret_entirely_000000' })
    expect((await send(r, bad)).status).toBe(401) // rejected
    expect((await send(r, await createSignedDelivery({ type: 'organization.updated' }))).outcome).toBe('unknown_type') // ignored
    const seq = await createEmailSequence({ types: ['email.queued', 'email.submitted'] })
    await send(r, seq.deliveries[1] as SignedDelivery)
    expect((await send(r, seq.deliveries[0] as SignedDelivery)).outcome).toBe('skipped')

    const outcomes = roots().map((span) => [span.attributes['email_webhooks.outcome'], span.attributes['email_webhooks.reason']])
    expect(outcomes).toEqual([
      ['failed', 'handler_failed'],
      ['handled', undefined],
      ['duplicate', undefined],
      ['in_flight', 'in_flight'],
      ['handled', undefined],
      ['rejected', 'signature_mismatch'],
      ['ignored', 'unknown_type'],
      ['handled', undefined],
      ['skipped', undefined],
    ])
    const failed = roots()[0] as ReadableSpan
    expect(failed.status).toEqual({ code: SpanStatusCode.ERROR, message: 'handler_failed' })
    expect(failed.attributes['error.type']).toBe('handler_failed')
    // Refused before verification: no event id on the span.
    expect(roots()[5]?.attributes['email_webhooks.event.id']).toBeUndefined()
    expect(roots()[5]?.status.code).toBe(SpanStatusCode.UNSET)

    const counted = await points('email_webhooks.deliveries')
    const byOutcome: Record<string, number> = {}
    for (const point of counted) {
      const outcome = String(point.attributes['email_webhooks.outcome'])
      byOutcome[outcome] = (byOutcome[outcome] ?? 0) + (point.value as number)
    }
    expect(byOutcome).toEqual({ failed: 1, handled: 3, duplicate: 1, in_flight: 1, rejected: 1, ignored: 1, skipped: 1 })
    expect(r.stats().deliveries).toEqual(byOutcome)
    expect(counted.find((p) => p.attributes['email_webhooks.outcome'] === 'rejected')?.attributes).toEqual({
      'email_webhooks.outcome': 'rejected',
      'email_webhooks.reason': 'signature_mismatch',
    })
  })

  it('runs the handler inside its span: the app’s own spans nest under it, and the handler span records the error', async () => {
    const tracer = tracerProvider.getTracer('the-app')
    const r = receiver({
      handlers: {
        'email.bounced': async () => {
          const own = tracer.startSpan('UPDATE recipients')
          own.end()
          throw new Error('database down')
        },
      },
    })
    const delivery = await createSignedDelivery({ type: 'email.bounced' })
    await send(r, delivery)
    const handler = spans('email-webhooks handler')[0] as ReadableSpan
    const own = spans('UPDATE recipients')[0] as ReadableSpan
    expect(own.parentSpanContext?.spanId).toBe(handler.spanContext().spanId)
    expect(handler.status.code).toBe(SpanStatusCode.ERROR)
    expect(handler.events.map((e) => [e.name, e.attributes?.['exception.message']])).toEqual([['exception', 'database down']])
    expect(handler.attributes['email_webhooks.handler.result']).toBe('error')
  })

  it('links the sender’s traceparent instead of continuing its trace; under the app’s own span it is an internal child', async () => {
    const r = receiver({ handlers: { 'email.bounced': () => {} } })
    const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'
    await send(r, await createSignedDelivery({ type: 'email.bounced' }), { traceparent })
    const root = roots()[0] as ReadableSpan
    expect(root.parentSpanContext).toBeUndefined()
    expect(root.spanContext().traceId).not.toBe('0af7651916cd43dd8448eb211c80319c')
    expect(root.links).toHaveLength(1)
    expect(root.links[0]?.context).toMatchObject({ traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331' })
    expect(root.links[0]?.attributes).toEqual({ 'email_webhooks.link.source': 'sender' })

    exporter.reset()
    await send(r, await createSignedDelivery({ type: 'email.bounced' }), {
      traceparent: '00-00000000000000000000000000000000-b7ad6b7169203331-01',
    })
    expect(roots()[0]?.links).toEqual([])

    exporter.reset()
    const inner = await createSignedDelivery({ type: 'email.bounced' })
    const app = tracerProvider.getTracer('the-app').startSpan('POST /hooks', { kind: SpanKind.SERVER })
    await context.with(trace.setSpan(context.active(), app), () => send(r, inner))
    const nested = roots()[0] as ReadableSpan
    expect(nested.kind).toBe(SpanKind.INTERNAL)
    expect(nested.parentSpanContext?.spanId).toBe(app.spanContext().spanId)
    app.end()
  })

  it('never puts the secret, a signature or the body in a span', async () => {
    const r = receiver({
      handlers: {
        'email.bounced': () => {
          throw new Error('boom')
        },
      },
    })
    const delivery = await createSignedDelivery({ type: 'email.bounced' })
    await send(r, delivery)
    await send(r, await createSignedDelivery({ type: 'email.bounced', secret: 'whsec_another_secret_entirely_000000' }))
    const text = JSON.stringify(
      spans().map((s) => ({ attributes: s.attributes, events: s.events, status: s.status, name: s.name, links: s.links })),
    )
    expect(text).not.toContain(TEST_SECRET)
    expect(text).not.toContain(delivery.headers['webhook-signature'] as string)
    expect(text).not.toContain(delivery.body)
    expect(text).not.toContain('"data"')
  })

  it('traces the inbox worker’s entries and reports the inbox’s depth, lag and dead letters', async () => {
    const store: DedupStore = new MemoryDedupStore()
    const r = receiver({
      store,
      mode: 'inbox',
      inbox: { worker: false, maxAttempts: 1 },
      handlers: {
        'email.bounced': () => {},
        'email.complained': () => {
          throw new Error('poison')
        },
      },
    })
    await send(r, await createSignedDelivery({ type: 'email.bounced' }))
    await send(r, await createSignedDelivery({ type: 'email.complained' }))
    expect(roots().map((s) => s.attributes['email_webhooks.outcome'])).toEqual(['queued', 'queued'])
    expect(childrenOf(roots()[0] as ReadableSpan).map((s) => s.name)).toEqual(['email-webhooks verify', 'email-webhooks enqueue'])
    const gauges = async () =>
      Object.fromEntries(
        await Promise.all(
          ['depth', 'running', 'lag', 'dead'].map(async (name) => [name, (await points(`email_webhooks.inbox.${name}`))[0]?.value]),
        ),
      )
    const before = await gauges()
    expect(before).toMatchObject({ depth: 2, running: 0, dead: 0 })
    expect(before.lag).toBeGreaterThanOrEqual(0)
    expect(await r.inbox?.work()).toBe('handled')
    expect(await r.inbox?.work()).toBe('dead')
    expect(await gauges()).toMatchObject({ depth: 0, running: 0, dead: 1, lag: 0 })
    const processed = spans('email-webhooks process')
    expect(processed.map((s) => [s.kind, s.attributes['email_webhooks.outcome']])).toEqual([
      [SpanKind.CONSUMER, 'handled'],
      [SpanKind.CONSUMER, 'dead'],
    ])
    expect(childrenOf(processed[0] as ReadableSpan).map((s) => s.name)).toEqual([
      'email-webhooks claim',
      'email-webhooks handler',
      'email-webhooks complete',
    ])
    expect(sumBy(await points('email_webhooks.inbox.processed'), 'email_webhooks.outcome')).toEqual({ handled: 1, dead: 1 })
  })

  it('finds @opentelemetry/api by itself and uses providers registered after the receiver was built; telemetry: false turns it off', async () => {
    const auto = createReceiver({ secret: TEST_SECRET, store: new MemoryDedupStore(), logger: false, handlers: {} })
    const off = createReceiver({ secret: TEST_SECRET, store: new MemoryDedupStore(), logger: false, handlers: {}, telemetry: false })
    trace.setGlobalTracerProvider(tracerProvider)
    metrics.setGlobalMeterProvider(meterProvider)
    try {
      await auto.receive(await createSignedDelivery({ type: 'email.bounced' }))
      await off.receive(await createSignedDelivery({ type: 'email.bounced' }))
      expect(roots()).toHaveLength(1)
      expect(sumBy(await points('email_webhooks.deliveries'), 'email_webhooks.outcome')).toEqual({ handled: 1 })
      expect(off.stats().deliveries).toEqual({ handled: 1 })
    } finally {
      trace.disable()
      metrics.disable()
    }
  })

  it('makes no span and records no metric while no SDK is registered (the API alone costs next to nothing)', async () => {
    const api = await import('@opentelemetry/api')
    let started = 0
    const counting = {
      ...api,
      trace: {
        setSpan: api.trace.setSpan.bind(api.trace),
        getSpan: api.trace.getSpan.bind(api.trace),
        getTracerProvider: () => {
          const provider = api.trace.getTracerProvider() as ReturnType<typeof api.trace.getTracerProvider> & { getDelegate(): unknown }
          return {
            getDelegate: () => provider.getDelegate(),
            getTracer: (name: string, version?: string) => {
              const tracer = provider.getTracer(name, version)
              return {
                startSpan: (...args: Parameters<typeof tracer.startSpan>) => {
                  started++
                  return tracer.startSpan(...args)
                },
              }
            },
          }
        },
      },
    }
    const r = createReceiver({
      secret: TEST_SECRET,
      store: new MemoryDedupStore(),
      logger: false,
      handlers: {},
      telemetry: { api: counting },
    })
    await r.receive(await createSignedDelivery({ type: 'email.bounced' }))
    expect(started).toBe(0)
    expect(r.stats().deliveries).toEqual({ handled: 1 })
    // An SDK registered later: the next delivery is traced.
    trace.setGlobalTracerProvider(tracerProvider)
    try {
      await r.receive(await createSignedDelivery({ type: 'email.bounced' }))
      expect(started).toBeGreaterThanOrEqual(4)
      expect(roots()).toHaveLength(1)
    } finally {
      trace.disable()
    }
  })

  it('refuses a telemetry.api that is not the OpenTelemetry API', () => {
    expect(() => receiver({ telemetry: { api: {} } })).toThrow(/telemetry.api must be the @opentelemetry\/api module/)
    expect(() => receiver({ telemetry: 'yes' as unknown as boolean })).toThrow(/telemetry must be true, false/)
  })
})

describe('the package without @opentelemetry/api', () => {
  it('imports it nowhere but in the Node loader, and names the version it reports', () => {
    const dist = join(import.meta.dirname, '..', '..', 'packages', 'core', 'dist')
    for (const file of ['index.js', 'index.cjs']) {
      const text = readFileSync(join(dist, file), 'utf8')
      expect(text, file).not.toMatch(/^(import|export)[^\n]*['"]@opentelemetry|require\(['"]@opentelemetry/m)
    }
    expect(readFileSync(join(dist, 'telemetry-api-node.js'), 'utf8')).toContain('("@opentelemetry/api")')
    const version = JSON.parse(readFileSync(join(dist, '..', 'package.json'), 'utf8')).version
    expect(readFileSync(join(dist, 'index.js'), 'utf8')).toContain(`SCOPE_VERSION = "${version}"`)
  })
})
