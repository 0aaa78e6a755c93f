// `send --email` / `--created-at` against a receiver built on core's fetch handler with ordering on
// and skipStale (a real HTTP listener on 127.0.0.1): a late event of an email is acknowledged
// `skipped: stale`, and the CLI shows it as such; the events it generates carry what it documents
// (data.id, data.recipient for recipient, bounce and complaint events, created_at).
import { readFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import { resolve } from 'node:path'
import { EMAIL_EVENT_TYPES, type EmailEventHandlers, emailWebhook, MemoryDedupStore, type WebhookEvent } from '@email-webhooks/core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { RequestJson } from '../src/lib/report.js'
import { runCli, SECRET } from './helpers/cli.js'

const env = { EMAIL_WEBHOOK_SECRET: SECRET }
let server: Server
let url: string
/** Every event whose handler ran, in order. */
const handled: WebhookEvent[] = []

beforeAll(async () => {
  const record = (event: WebhookEvent): void => void handled.push(event)
  const handlers = Object.fromEntries(EMAIL_EVENT_TYPES.map((type) => [type, record])) as EmailEventHandlers
  const handle = emailWebhook(SECRET, handlers, { store: new MemoryDedupStore(), ordering: true, skipStale: true })
  server = createServer(async (req, res) => {
    const chunks: Buffer[] = []
    for await (const chunk of req) chunks.push(chunk as Buffer)
    const request = new Request(`http://127.0.0.1${req.url}`, {
      method: req.method ?? 'POST',
      headers: req.headers as Record<string, string>,
      body: Buffer.concat(chunks),
    })
    const response = await handle(request)
    res.writeHead(response.status, Object.fromEntries(response.headers))
    res.end(Buffer.from(await response.arrayBuffer()))
  })
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done))
  const address = server.address()
  url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/hooks`
})

afterAll(() => new Promise((done) => server.close(done)))

async function sendJson(args: string[]): Promise<{ code: number | null; requests: RequestJson[] }> {
  const result = await runCli(['send', url, ...args, '--json'], { env })
  return { code: result.code, requests: JSON.parse(result.stdout).requests }
}

const eventsOf = (emailId: string): WebhookEvent[] => handled.filter((event) => event.data.id === emailId)

describe.concurrent('send --email and --created-at against a receiver with ordering and skipStale', () => {
  it('makes a late event of the same email, which the receiver answers skipped: stale: shown as such in --json and in the line', async () => {
    const email = crypto.randomUUID()
    const newer = await sendJson(['--type', 'email.submitted', '--email', email])
    expect(newer.code).toBe(0)
    expect(newer.requests[0]).toMatchObject({ status: 200, skipped: null, ok: true })

    const late = await sendJson(['--type', 'email.queued', '--email', email, '--created-at', '-5m'])
    expect(late.code).toBe(0)
    expect(late.requests[0]).toMatchObject({ status: 200, skipped: 'stale', duplicate: false, ok: true, expected: '2xx' })

    const text = await runCli(['send', url, '--type', 'email.deferred', '--email-id', email, '--created-at', '2020-01-01T00:00:00Z'], {
      env,
    })
    expect(text.code).toBe(0)
    expect(text.stdout).toMatch(
      /✓ send\s+200 {2}skipped: stale {2}\d+\.\d ms {2}email\.deferred \S+ {2}right: .*without running a handler: the receiver orders events and already handled a newer event of this email/,
    )
    // Only the newer event ran a handler.
    expect(eventsOf(email).map((event) => event.type)).toEqual(['email.submitted'])
  }, 60_000)

  it('--created-at sets the envelope created_at: a date-time as written, or relative to now', async () => {
    const email = crypto.randomUUID()
    expect((await sendJson(['--type', 'email.rejected', '--email', email, '--created-at', '2026-01-02T03:04:05.678+01:00'])).code).toBe(0)
    const before = Date.now()
    expect((await sendJson(['--type', 'email.complained', '--email', email, '--created-at', '-2h'])).code).toBe(0)
    const [rejected, complained] = eventsOf(email)
    expect(rejected?.created_at).toBe('2026-01-02T03:04:05.678+01:00')
    const twoHoursAgo = before - 2 * 3_600_000
    expect(Math.abs(Date.parse(complained?.created_at ?? '') - twoHoursAgo)).toBeLessThan(60_000)
  }, 60_000)

  it('--created-at takes a date alone as midnight UTC, as emails reconcile --since does, in a send and in a load', async () => {
    const email = crypto.randomUUID()
    expect((await sendJson(['--type', 'email.queued', '--email', email, '--created-at', '2026-11-20'])).code).toBe(0)
    const load = await runCli(
      ['send', url, '--count', '1', '--type', 'email.recipient_accepted', '--email', email, '--created-at', '2026-11-19'],
      {
        env,
      },
    )
    expect(load.code, load.stderr).toBe(0)
    expect(Object.fromEntries(eventsOf(email).map((event) => [event.type, event.created_at]))).toEqual({
      'email.queued': '2026-11-20T00:00:00Z',
      'email.recipient_accepted': '2026-11-19T00:00:00Z',
    })
  }, 60_000)

  it('--out-of-order --created-at starts the lifecycle there, one second apart, all of one --email', async () => {
    const email = crypto.randomUUID()
    const { code } = await sendJson(['--out-of-order', '--email', email, '--created-at', '2026-01-01T00:00:00Z'])
    expect(code).toBe(0)
    // Recipient events are facts: never skipped, so their handlers ran whatever the order.
    const byType = new Map(eventsOf(email).map((event) => [event.type, event.created_at]))
    expect(byType.get('email.recipient_deferred')).toBe('2026-01-01T00:00:02.000Z')
    expect(byType.get('email.recipient_resubmitted')).toBe('2026-01-01T00:00:03.000Z')
    expect(byType.get('email.recipient_accepted')).toBe('2026-01-01T00:00:04.000Z')
  }, 60_000)

  it('generated recipient, bounce and complaint events carry data.recipient; message events carry only data.id', async () => {
    const email = crypto.randomUUID()
    // Sent at once: all but email.queued an hour older, so that ordering never skips it as stale whichever the receiver handles first.
    const older = ['--created-at', '-1h']
    const sends = [['email.bounced', ...older], ['email.recipient_accepted', ...older], ['email.queued']].map(([type, ...rest]) =>
      sendJson(['--type', type as string, '--email', email, ...rest]),
    )
    const load = runCli(['send', url, '--count', '2', '--type', 'email.complained', '--email', email, ...older], { env })
    expect((await Promise.all(sends)).map((sent) => sent.code)).toEqual([0, 0, 0])
    expect((await load).code).toBe(0)
    const data = Object.fromEntries(eventsOf(email).map((event) => [event.type, event.data]))
    expect(data['email.bounced']).toEqual({ id: email, recipient: 'recipient@example.com' })
    expect(data['email.recipient_accepted']).toEqual({ id: email, recipient: 'recipient@example.com' })
    expect(data['email.complained']).toEqual({ id: email, recipient: 'recipient@example.com' })
    expect(data['email.queued']).toEqual({ id: email })
  }, 60_000)
})

describe("the command line guide's send section (docs/guides/cli.md)", () => {
  const readme = readFileSync(resolve(import.meta.dirname, '../../../docs/guides/cli.md'), 'utf8')
  const section = readme.slice(readme.indexOf('### `send <url>`'), readme.indexOf('### `send <url> --count N`'))
  const commands = section.split('\n').filter((line) => /^(cat event\.json \| )?npx --no-install email-webhooks send /.test(line))

  it('runs each of its commands as written (URL and email id filled in), each answered as the guide says', async () => {
    expect(commands.length).toBeGreaterThanOrEqual(6)
    const email = crypto.randomUUID()
    const event = JSON.stringify({
      id: crypto.randomUUID(),
      type: 'email.rejected',
      created_at: new Date().toISOString(),
      data: { id: email },
    })
    const outputs: string[] = []
    for (const line of commands) {
      const args = line
        .replace(/^(cat event\.json \| )?npx --no-install email-webhooks /, '')
        .replaceAll('http://localhost:3000/hooks', url)
        .replaceAll('0c1f…', email)
        .split(' ')
      const result = await runCli(args, { env, ...(line.startsWith('cat ') ? { input: event } : {}) })
      expect(result.code, line).toBe(0)
      outputs.push(result.stdout)
    }
    // The late event of the pair above the modes table: skipped as stale.
    const late = commands.findIndex((line) => line.includes('--created-at -5m'))
    expect(outputs[late]).toMatch(/✓ send\s+200 {2}skipped: stale/)
    // Seven CLI runs one after the other: room for a loaded machine.
  }, 90_000)
})
