/**
 * The OpenTelemetry SDK as an application registers it, for the `memory-otel-sdk` server mode: a
 * tracer provider whose BatchSpanProcessor hands spans to an exporter that drops them (the cost of
 * making, recording and batching them, not of a network), a meter provider read every 60 s by a
 * reader whose exporter drops the data, and the async-hooks context manager, so a handler's own
 * spans nest under the delivery's.
 */
import { context, metrics, trace } from '@opentelemetry/api'
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks'
import { AggregationTemporality, MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics'
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base'

/** Accepts every batch and keeps nothing. */
const dropping = {
  export: (_items, done) => done({ code: 0 }),
  shutdown: async () => {},
  forceFlush: async () => {},
  selectAggregationTemporality: () => AggregationTemporality.CUMULATIVE,
}

export async function registerOtelSdk() {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable())
  trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(dropping)] }))
  metrics.setGlobalMeterProvider(
    new MeterProvider({ readers: [new PeriodicExportingMetricReader({ exporter: dropping, exportIntervalMillis: 60_000 })] }),
  )
}
