/**
 * The observability recipe, run for real: the example server with its telemetry.js (Prometheus
 * exporter and OTLP traces to a collector stand-in on 127.0.0.1), deliveries that are handled,
 * refused and failed, the /metrics scrape, the spans the collector receives; and every metric and
 * label the Grafana dashboard and the alert rules name is one the exporter really writes (the
 * inbox's gauges from an inbox-mode receiver on the same exporter).
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createReceiver, MemoryDedupStore } from '@email-webhooks/core'
import { createEvent, createSignedDelivery, TEST_SECRET } from '@email-webhooks/core/testing'
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus'
import { MeterProvider } from '@opentelemetry/sdk-metrics'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parse } from 'yaml'

/** The values of the `email_webhooks.outcome` attribute (core's DeliveryOutcome). */
const OUTCOMES = ['handled', 'queued', 'duplicate', 'skipped', 'ignored', 'rejected', 'in_flight', 'failed']
const ROOT = join(import.meta.dirname, '..')
const dir = mkdtempSync(join(tmpdir(), 'email-webhooks-observability-'))

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo
      server.close(() => resolve(port))
    })
  })
}

/** A stand-in for an OpenTelemetry Collector: keeps every OTLP/HTTP JSON trace export. */
const exports: {
  resourceSpans: { scopeSpans: { spans: { name: string; attributes: { key: string; value: Record<string, unknown> }[] }[] }[] }[]
}[] = []
let collector: Server
let server: ChildProcess
let hooks: string
let metricsUrl: string

beforeAll(async () => {
  collector = createServer((req, res) => {
    let body = ''
    req.on('data', (chunk) => {
      body += chunk
    })
    req.on('end', () => {
      if (req.url === '/v1/traces') exports.push(JSON.parse(body))
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}')
    })
  })
  await new Promise<void>((resolve) => collector.listen(0, '127.0.0.1', resolve))
  const prometheusPort = await freePort()
  metricsUrl = `http://127.0.0.1:${prometheusPort}/metrics`
  server = spawn(process.execPath, ['--import', './src/telemetry.js', 'src/server.js'], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      EMAIL_WEBHOOK_SECRET: TEST_SECRET,
      EMAIL_WEBHOOKS_DB: join(dir, 'dedup.db'),
      PORT: '0',
      HOST: '127.0.0.1',
      PROMETHEUS_HOST: '127.0.0.1',
      PROMETHEUS_PORT: String(prometheusPort),
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `http://127.0.0.1:${(collector.address() as AddressInfo).port}/v1/traces`,
      OTEL_BSP_SCHEDULE_DELAY: '100',
    },
  })
  const port = await new Promise<string>((resolve, reject) => {
    let out = ''
    server.stdout?.on('data', (chunk) => {
      out += chunk
      const match = /listening on http:\/\/localhost:(\d+)/.exec(out)
      if (match) resolve(match[1] as string)
    })
    server.once('exit', (code) => reject(new Error(`the example exited with ${code}`)))
  })
  hooks = `http://127.0.0.1:${port}/hooks`
}, 60_000)

afterAll(async () => {
  server?.kill('SIGTERM')
  await new Promise((resolve) => collector?.close(resolve))
  rmSync(dir, { recursive: true, force: true })
})

async function post(delivery: { headers: Record<string, string>; body: string }): Promise<number> {
  return (await fetch(hooks, { method: 'POST', headers: delivery.headers, body: delivery.body })).status
}

/** The value of the exposition line of `name` whose labels include all of `labels`. */
function sample(text: string, name: string, labels: Record<string, string>): number | undefined {
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue
    if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) return Number(line.slice(line.lastIndexOf(' ') + 1))
  }
  return undefined
}

describe('examples/observability', () => {
  it('exports deliveries by outcome and reason to Prometheus and spans to the collector', async () => {
    const handled = await createSignedDelivery({ event: createEvent('email.bounced') })
    expect(await post(handled)).toBe(200)
    expect(await post(handled)).toBe(200)
    expect(await post(await createSignedDelivery({ event: createEvent('email.bounced', { data: { id: 'fail-1' } }) }))).toBe(500)
    expect(await post(await createSignedDelivery({ type: 'email.bounced', secret: 'whsec_some_other_secret_000000000000' }))).toBe(401)

    const text = await (await fetch(metricsUrl)).text()
    const deliveries = (labels: Record<string, string>) => sample(text, 'email_webhooks_deliveries_total', labels)
    expect(deliveries({ email_webhooks_outcome: 'handled', email_webhooks_event_type: 'email.bounced' })).toBe(1)
    expect(deliveries({ email_webhooks_outcome: 'duplicate' })).toBe(1)
    expect(deliveries({ email_webhooks_outcome: 'failed', email_webhooks_reason: 'handler_failed' })).toBe(1)
    expect(deliveries({ email_webhooks_outcome: 'rejected', email_webhooks_reason: 'signature_mismatch' })).toBe(1)
    expect(sample(text, 'email_webhooks_handler_duration_count', { email_webhooks_handler_result: 'error' })).toBe(1)
    expect(
      sample(text, 'email_webhooks_store_duration_count', {
        email_webhooks_store_step: 'claim',
        email_webhooks_store: 'SqliteDedupStore',
      }),
    ).toBe(3)
    expect(text).not.toContain(TEST_SECRET)

    for (let i = 0; i < 100 && exports.flatMap((e) => e.resourceSpans).length < 4; i++) await new Promise((r) => setTimeout(r, 50))
    const spans = exports.flatMap((e) => e.resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans)))
    const roots = spans.filter((span) => span.name === 'email-webhooks receive')
    const outcomes = roots.map((span) => span.attributes.find((a) => a.key === 'email_webhooks.outcome')?.value.stringValue)
    expect(outcomes.sort()).toEqual(['duplicate', 'failed', 'handled', 'rejected'])
    expect(new Set(spans.map((span) => span.name))).toEqual(
      new Set([
        'email-webhooks receive',
        'email-webhooks verify',
        'email-webhooks claim',
        'email-webhooks handler',
        'email-webhooks complete',
        'email-webhooks release',
      ]),
    )
    expect(JSON.stringify(exports)).not.toContain(handled.body)
  })

  it('names in the dashboard and the alert rules only metrics and labels the exporter writes', async () => {
    // The inbox's gauges and counters come from an inbox-mode receiver: one on its own exporter here.
    const port = await freePort()
    const exporter = new PrometheusExporter({ host: '127.0.0.1', port })
    const meterProvider = new MeterProvider({ readers: [exporter] })
    const receiver = createReceiver({
      secret: TEST_SECRET,
      store: new MemoryDedupStore(),
      mode: 'inbox',
      inbox: { worker: false, maxAttempts: 1 },
      logger: false,
      telemetry: { meterProvider },
      handlers: {
        'email.bounced': () => {
          throw new Error('poison')
        },
      },
    })
    try {
      await receiver.receive(await createSignedDelivery({ type: 'email.bounced' }))
      expect(await receiver.inbox?.work()).toBe('dead')
      const written = (await (await fetch(`http://127.0.0.1:${port}/metrics`)).text()) + (await (await fetch(metricsUrl)).text())
      expect(sample(written, 'email_webhooks_inbox_dead', {})).toBe(1)
      const series = new Set([...written.matchAll(/^(email_webhooks_[a-z_]+)\{/gm)].map((m) => m[1]))
      const labels = new Set([...written.matchAll(/[{,](email_webhooks_[a-z_]+)="/g)].map((m) => m[1]))

      const dashboard = JSON.parse(readFileSync(join(ROOT, 'grafana', 'dashboard.json'), 'utf8'))
      const alerts = parse(readFileSync(join(ROOT, 'prometheus', 'alerts.yml'), 'utf8'))
      const rules = alerts.groups.flatMap((group: { rules: { alert: string; expr: string }[] }) => group.rules)
      expect(rules.map((rule: { alert: string }) => rule.alert)).toEqual([
        'EmailWebhookSignatureMismatches',
        'EmailWebhookServerErrors',
        'EmailWebhookDeadLetters',
      ])
      const exprs: string[] = [
        ...dashboard.panels.flatMap((panel: { targets: { expr: string }[] }) => panel.targets.map((target) => target.expr)),
        ...rules.map((rule: { expr: string }) => rule.expr),
      ]
      for (const expr of exprs) {
        for (const [name] of expr.matchAll(/email_webhooks_[a-z_]+(?=[[{(\s)]|$)/g)) {
          const known = series.has(name) || labels.has(name)
          expect(known, `${name} in ${expr}`).toBe(true)
        }
        for (const [, label, value] of expr.matchAll(/(email_webhooks_[a-z_]+)=~?"([^"]+)"/g)) {
          for (const one of (value as string).split('|')) {
            // Outcomes are a closed list (core's DeliveryOutcome); other values must be written here.
            if (label === 'email_webhooks_outcome') expect(OUTCOMES, `${one} in ${expr}`).toContain(one)
            else expect(written, `${label}="${one}" in ${expr}`).toContain(`${label}="${one}"`)
          }
        }
      }
    } finally {
      await exporter.shutdown()
    }
  })
})
