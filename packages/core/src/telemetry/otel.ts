/**
 * The part of `@opentelemetry/api` (1.4 or later) the receiver uses, written out structurally so
 * that core's types never name the package: it is an optional peer dependency, and an app
 * without it neither installs nor loads it. `telemetry: { api }` takes the package's module.
 */

/** `SpanKind` values (the API's enum). */
export const SPAN_KIND = { INTERNAL: 0, SERVER: 1, CONSUMER: 4 } as const
/** `SpanStatusCode.ERROR`. */
export const STATUS_ERROR = 2

export type Attributes = Record<string, string | number | boolean | undefined>

/** An OpenTelemetry context (opaque). */
export type OtelContext = object

export interface SpanContext {
  traceId: string
  spanId: string
  traceFlags: number
  isRemote?: boolean
}

export interface OtelSpan {
  setAttribute(key: string, value: string | number | boolean): unknown
  setAttributes(attributes: Attributes): unknown
  setStatus(status: { code: number; message?: string }): unknown
  recordException(exception: Error | string): void
  end(): void
  isRecording(): boolean
}

export interface SpanOptions {
  kind?: number
  attributes?: Attributes
  links?: { context: SpanContext; attributes?: Attributes }[]
}

export interface OtelTracer {
  startSpan(name: string, options?: SpanOptions, context?: OtelContext): OtelSpan
}

export interface TracerProvider {
  getTracer(name: string, version?: string): OtelTracer
  /** The global provider is a proxy: this is the provider registered behind it (a no-op one until an SDK registers). */
  getDelegate?(): TracerProvider
}

export interface Counter {
  add(value: number, attributes?: Attributes): void
}
export interface Histogram {
  record(value: number, attributes?: Attributes): void
}
export interface ObservableResult {
  observe(observable: object, value: number, attributes?: Attributes): void
}
export interface InstrumentOptions {
  description?: string
  unit?: string
  advice?: { explicitBucketBoundaries?: number[] }
}

export interface Meter {
  createCounter(name: string, options?: InstrumentOptions): Counter
  createUpDownCounter(name: string, options?: InstrumentOptions): Counter
  createHistogram(name: string, options?: InstrumentOptions): Histogram
  createObservableGauge(name: string, options?: InstrumentOptions): object
  addBatchObservableCallback(callback: (result: ObservableResult) => void | Promise<void>, observables: object[]): void
  removeBatchObservableCallback(callback: (result: ObservableResult) => void | Promise<void>, observables: object[]): void
}

export interface MeterProvider {
  getMeter(name: string, version?: string): Meter
}

/** The `@opentelemetry/api` module, as far as the receiver uses it. */
export interface OtelApi {
  trace: {
    getTracerProvider(): TracerProvider
    setSpan(context: OtelContext, span: OtelSpan): OtelContext
    getSpan(context: OtelContext): OtelSpan | undefined
  }
  context: {
    active(): OtelContext
    with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(
      context: OtelContext,
      fn: F,
      thisArg?: unknown,
      ...args: A
    ): ReturnType<F>
  }
  metrics: {
    getMeterProvider(): MeterProvider
  }
  /** The API's no-op meter (what a no-op meter provider hands out). */
  createNoopMeter?(): Meter
}

/** Whether `value` looks like the `@opentelemetry/api` module. */
export function isOtelApi(value: unknown): value is OtelApi {
  const api = value as Partial<OtelApi> | null
  return (
    typeof api === 'object' &&
    api !== null &&
    typeof api.trace?.getTracerProvider === 'function' &&
    typeof api.context?.with === 'function' &&
    typeof api.metrics?.getMeterProvider === 'function'
  )
}
