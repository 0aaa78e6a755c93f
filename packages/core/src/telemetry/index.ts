/**
 * OpenTelemetry for a receiver, through `@opentelemetry/api` only (an optional peer dependency):
 * a span per delivery with child spans for its steps, and metrics. On Node the API is found when
 * it is installed; elsewhere pass it (`telemetry: { api }`). Without it, nothing is loaded and the
 * receiver does no telemetry work at all. Names: names.ts (one table on the docs' Observability page).
 */
import { loadOtelApi } from '#telemetry-api'
import { createInstruments, type Instruments } from './instruments.js'
import { ATTR, type DeliveryOutcome, METRIC, SCOPE, SCOPE_VERSION, SPAN_PROCESS, SPAN_RECEIVE } from './names.js'
import {
  type Attributes,
  isOtelApi,
  type MeterProvider,
  type ObservableResult,
  type OtelApi,
  type OtelTracer,
  SPAN_KIND,
  type SpanContext,
  type TracerProvider,
} from './otel.js'
import { DeliveryTrace } from './trace.js'

/** `telemetry` option: on when `@opentelemetry/api` is installed (Node), `false` for off, or the API and providers to use. */
export type TelemetryOption =
  | boolean
  | {
      /** The `@opentelemetry/api` module (`import * as api from '@opentelemetry/api'`): needed outside Node. */
      api?: unknown
      /** Spans go here instead of the global tracer provider. */
      tracerProvider?: TracerProvider
      /** Metrics go here instead of the global meter provider. */
      meterProvider?: MeterProvider
    }

/** What the inbox gauges read. */
export type InboxGaugeSource = () => Promise<{ pending: number; running: number; dead: number; lagMs: number | null }>

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/
const ZERO_TRACE = '0'.repeat(32)
const ZERO_SPAN = '0'.repeat(16)

/** The sender's `traceparent` header as a span context, when it is a valid W3C one. */
function senderContext(headers: unknown): SpanContext | undefined {
  if (headers === null || typeof headers !== 'object') return undefined
  const raw =
    typeof (headers as { get?: unknown }).get === 'function'
      ? (headers as { get(name: string): string | null }).get('traceparent')
      : (headers as Record<string, unknown>).traceparent
  if (typeof raw !== 'string') return undefined
  const match = TRACEPARENT.exec(raw.trim().toLowerCase())
  if (!match || match[1] === ZERO_TRACE || match[2] === ZERO_SPAN) return undefined
  return {
    traceId: match[1] as string,
    spanId: match[2] as string,
    traceFlags: Number.parseInt(match[3] as string, 16) & 1,
    isRemote: true,
  }
}

/** The API to use for `option`, or undefined when telemetry is off. */
export function resolveTelemetry(option: TelemetryOption | undefined, prefix: string): OtelApi | undefined {
  if (option === false) return undefined
  if (option !== undefined && option !== true && (option === null || typeof option !== 'object')) {
    throw new TypeError(`${prefix} telemetry must be true, false, or { api, tracerProvider, meterProvider }.`)
  }
  const given = typeof option === 'object' ? option.api : undefined
  const api = given ?? loadOtelApi()
  if (api === undefined) return undefined
  if (!isOtelApi(api))
    throw new TypeError(`${prefix} telemetry.api must be the @opentelemetry/api module (import * as api from '@opentelemetry/api').`)
  return api
}

/** Whether `provider` is the API's no-op tracer provider (nothing registered): then no span is made. */
function tracesNothing(provider: TracerProvider): boolean {
  // The API's class name: a bundler that renames it only costs the no-op spans, never a lost one.
  return provider.constructor?.name === 'NoopTracerProvider'
}

/** One receiver's telemetry. */
export class Telemetry {
  readonly #api: OtelApi
  readonly #tracer: OtelTracer
  /** The global tracer provider (a proxy) when none was given, to see whether an SDK registered behind it. */
  readonly #globalTracers: TracerProvider | undefined
  #delegate: TracerProvider | undefined
  #tracing = true
  readonly #fixedMeters: MeterProvider | undefined
  readonly #store: string
  readonly #mode: string
  #meters: MeterProvider | undefined
  /** The instruments of the meter provider in use; undefined while it is the API's no-op one. */
  #instruments: Instruments | undefined
  #inbox: InboxGaugeSource | undefined
  /** The inbox gauges' callback and the meter it is registered on. */
  #gauges: { meter: Instruments['meter']; observables: object[]; callback: (result: ObservableResult) => Promise<void> } | undefined
  /** Counter attributes by outcome, reason and type: made once each. */
  readonly #counted = new Map<string, Attributes>()

  constructor(api: OtelApi, option: TelemetryOption | undefined, store: string, mode: string) {
    this.#api = api
    const given = typeof option === 'object' ? option : {}
    this.#globalTracers = given.tracerProvider === undefined ? api.trace.getTracerProvider() : undefined
    this.#tracer = (given.tracerProvider ?? (this.#globalTracers as TracerProvider)).getTracer(SCOPE, SCOPE_VERSION)
    this.#fixedMeters = given.meterProvider
    this.#store = store
    this.#mode = mode
  }

  /** Whether spans are made now: a provider was given, or an SDK registered behind the global one. */
  #traces(): boolean {
    const global = this.#globalTracers
    if (global === undefined) return true
    // The app may register an SDK after the receiver was built, or replace it.
    const current = this.#api.trace.getTracerProvider()
    const delegate = current.getDelegate?.() ?? current
    if (delegate !== this.#delegate) {
      this.#delegate = delegate
      this.#tracing = !tracesNothing(delegate)
    }
    return this.#tracing
  }

  /** Whether the meter provider last looked up (by the delivery's `receive`) meters: then its answer is counted. */
  get metering(): boolean {
    return this.#instruments !== undefined
  }

  /** The instruments of the meter provider in use now (the app may register one after the receiver was built); undefined while no SDK meters. */
  instruments(): Instruments | undefined {
    const provider = this.#fixedMeters ?? this.#api.metrics.getMeterProvider()
    if (provider !== this.#meters) {
      this.#meters = provider
      const meter = provider.getMeter(SCOPE, SCOPE_VERSION)
      this.#instruments = meter === this.#api.createNoopMeter?.() ? undefined : createInstruments(meter)
      if (this.#instruments && this.#inbox) this.#observe(this.#instruments)
    }
    return this.#instruments
  }

  /**
   * Starts a delivery's trace, or undefined when no SDK traces nor meters (then the receiver does
   * no telemetry work). Its span is a server span, or an internal one under the app's own active
   * span (its HTTP server span); the sender's trace context is linked, never made its parent.
   */
  receive(headers: unknown): DeliveryTrace | undefined {
    const instruments = this.instruments()
    if (!this.#traces()) return instruments && new DeliveryTrace(this.#api, this.#tracer, instruments, undefined, this.#store)
    const parent = this.#api.context.active()
    const sender = senderContext(headers)
    const span = this.#tracer.startSpan(
      SPAN_RECEIVE,
      {
        kind: this.#api.trace.getSpan(parent) === undefined ? SPAN_KIND.SERVER : SPAN_KIND.INTERNAL,
        attributes: this.#rootAttributes('receive'),
        links: sender ? [{ context: sender, attributes: { [ATTR.linkSource]: 'sender' } }] : undefined,
      },
      parent,
    )
    const root = { span, context: this.#api.trace.setSpan(parent, span) }
    return new DeliveryTrace(this.#api, this.#tracer, instruments, root, this.#store)
  }

  /** Starts an inbox entry's trace (a consumer span), or undefined when no SDK traces nor meters. */
  process(type: string, attempt: number): DeliveryTrace | undefined {
    const instruments = this.instruments()
    if (!this.#traces()) return instruments && new DeliveryTrace(this.#api, this.#tracer, instruments, undefined, this.#store)
    const parent = this.#api.context.active()
    const attributes = { ...this.#rootAttributes('process'), [ATTR.eventType]: type, [ATTR.inboxAttempt]: attempt }
    const span = this.#tracer.startSpan(SPAN_PROCESS, { kind: SPAN_KIND.CONSUMER, attributes }, parent)
    const root = { span, context: this.#api.trace.setSpan(parent, span) }
    return new DeliveryTrace(this.#api, this.#tracer, instruments, root, this.#store)
  }

  #rootAttributes(operation: 'receive' | 'process'): Attributes {
    return {
      [ATTR.store]: this.#store,
      [ATTR.mode]: this.#mode,
      [ATTR.messagingSystem]: 'email_webhooks',
      [ATTR.messagingOperation]: operation,
      ...(operation === 'receive' ? { [ATTR.httpMethod]: 'POST' } : {}),
    }
  }

  /** Counts a delivery in `email_webhooks.deliveries` (nothing while no SDK meters). */
  count(outcome: DeliveryOutcome, reason: string | undefined, type: string | undefined): void {
    const instruments = this.instruments()
    if (instruments === undefined) return
    const key = `${outcome}\u0000${reason ?? ''}\u0000${type ?? ''}`
    let attributes = this.#counted.get(key)
    if (attributes === undefined) {
      attributes = { [ATTR.outcome]: outcome }
      if (reason !== undefined) attributes[ATTR.reason] = reason
      if (type !== undefined) attributes[ATTR.eventType] = type
      if (this.#counted.size < 1_000) this.#counted.set(key, attributes)
    }
    instruments.deliveries.add(1, attributes)
  }

  /** Reports the inbox's depth, running entries, lag and dead letters as gauges. */
  observeInbox(source: InboxGaugeSource): void {
    this.#inbox = source
    const instruments = this.instruments()
    if (instruments) this.#observe(instruments)
  }
  #observe(instruments: Instruments): void {
    const source = this.#inbox
    if (!source) return
    const { meter } = instruments
    const depth = meter.createObservableGauge(METRIC.inboxDepth, { description: 'Inbox entries waiting (pending).', unit: '{entry}' })
    const running = meter.createObservableGauge(METRIC.inboxRunning, { description: 'Inbox entries a worker holds.', unit: '{entry}' })
    const lag = meter.createObservableGauge(METRIC.inboxLag, { description: 'Age of the oldest pending inbox entry.', unit: 's' })
    const dead = meter.createObservableGauge(METRIC.inboxDead, { description: 'Inbox entries given up (dead letters).', unit: '{entry}' })
    const attributes = { [ATTR.store]: this.#store }
    const callback = async (result: ObservableResult) => {
      const stats = await source().catch(() => undefined)
      if (!stats) return
      result.observe(depth, stats.pending, attributes)
      result.observe(running, stats.running, attributes)
      result.observe(lag, (stats.lagMs ?? 0) / 1000, attributes)
      result.observe(dead, stats.dead, attributes)
    }
    const observables = [depth, running, lag, dead]
    // A new meter provider: the gauges move to it.
    if (this.#gauges) this.#gauges.meter.removeBatchObservableCallback(this.#gauges.callback, this.#gauges.observables)
    meter.addBatchObservableCallback(callback, observables)
    this.#gauges = { meter, observables, callback }
  }
}

export { type DeliveryOutcome, METRIC } from './names.js'
export type { DeliveryTrace } from './trace.js'
