// OpenTelemetry for the receiver, loaded before the app: `node --import ./src/telemetry.js src/server.js`.
// Metrics: a Prometheus endpoint (PROMETHEUS_PORT, default 9464, at /metrics).
// Traces: OTLP over HTTP to OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (default http://localhost:4318/v1/traces),
// e.g. an OpenTelemetry Collector, Jaeger or Grafana Tempo.
// The receiver finds @opentelemetry/api by itself: nothing to pass to emailWebhook.
import { context, metrics, trace } from '@opentelemetry/api'
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks'
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus'
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http'
import { resourceFromAttributes } from '@opentelemetry/resources'
import { MeterProvider } from '@opentelemetry/sdk-metrics'
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base'

const resource = resourceFromAttributes({ 'service.name': process.env.OTEL_SERVICE_NAME ?? 'email-webhooks-receiver' })

// Handlers run inside the receiver's span: their own spans (database, HTTP) nest under it.
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable())

// /metrics on this machine only by default: set PROMETHEUS_HOST=0.0.0.0 when Prometheus scrapes
// from another host, and keep the port closed to the internet.
const prometheus = new PrometheusExporter({
  host: process.env.PROMETHEUS_HOST ?? '127.0.0.1',
  port: Number(process.env.PROMETHEUS_PORT ?? 9464),
})
metrics.setGlobalMeterProvider(new MeterProvider({ resource, readers: [prometheus] }))

const spans = new BatchSpanProcessor(new OTLPTraceExporter(), { scheduledDelayMillis: Number(process.env.OTEL_BSP_SCHEDULE_DELAY ?? 5000) })
trace.setGlobalTracerProvider(new BasicTracerProvider({ resource, spanProcessors: [spans] }))

// Send the last spans before the process ends.
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, async () => {
    await spans.shutdown().catch(() => {})
    await prometheus.shutdown().catch(() => {})
    process.exit(0)
  })
}
