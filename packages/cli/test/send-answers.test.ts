/**
 * What `send` shows of the receiver's answer, against real receivers on 127.0.0.1: the receiver's
 * error message under a wrong line (an Express app whose global express.json() took the body, a
 * handler that throws), a verdict that says what `--expect` asked for, and `queued` (not handled)
 * for an inbox-mode receiver, in the line and in `--json`.
 */
import type { Server } from 'node:http'
import { createRequire } from 'node:module'
import { resolve } from 'node:path'
import { emailWebhook, MemoryDedupStore } from '@email-webhooks/core'
import { listenSender, type SenderListener } from '@email-webhooks/core/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { RequestJson } from '../src/lib/report.js'
import { runCli, SECRET } from './helpers/cli.js'

// Express and its adapter, as the workspace's tests install them.
const requireFromTests = createRequire(resolve(import.meta.dirname, '../../../test/package.json'))
type Handler = (...args: unknown[]) => unknown
interface ExpressApp {
  use(handler: Handler): void
  post(path: string, handler: Handler): void
  listen(port: number, host: string, done: () => void): Server
}
const express = requireFromTests('express') as (() => ExpressApp) & { json(): Handler }
const { emailWebhook: expressWebhook } = requireFromTests('@email-webhooks/express') as {
  emailWebhook(secret: string, handlers: object, options: object): Handler
}

const env = { EMAIL_WEBHOOK_SECRET: SECRET }
const closers: Array<() => Promise<void>> = []
const urls = { parsed: '', failing: '', inbox: '' }

beforeAll(async () => {
  // A global express.json() before the route: the raw bytes are gone, and the receiver's message says how to fix it.
  const app = express()
  app.use(express.json())
  app.post('/hooks', expressWebhook(SECRET, {}, { store: 'memory', logger: false }))
  const server = await new Promise<Server>((done) => {
    const listening: Server = app.listen(0, '127.0.0.1', () => done(listening))
  })
  closers.push(() => new Promise((done) => server.close(() => done())))
  const address = server.address()
  urls.parsed = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/hooks`

  const serve = async (handler: (request: Request) => Promise<Response>): Promise<string> => {
    const listener: SenderListener = await listenSender({ fetch: handler })
    closers.push(() => listener.close())
    return `${listener.url}/hooks`
  }
  const fail = () => {
    throw new Error('CRM is down (simulated)')
  }
  urls.failing = await serve(emailWebhook(SECRET, { 'email.bounced': fail }, { store: new MemoryDedupStore(), logger: false }))
  urls.inbox = await serve(
    emailWebhook(SECRET, { 'email.bounced': () => {} }, { store: new MemoryDedupStore(), logger: false, mode: 'inbox' }),
  )
})
afterAll(async () => {
  for (const close of closers) await close()
})

describe('send shows what the receiver said', () => {
  it("prints the receiver's error message under a wrong line: the raw body taken by express.json()", async () => {
    const result = await runCli(['send', urls.parsed], { env })
    expect(result.code).toBe(1)
    const [, line, said] = result.stdout.trimEnd().split('\n')
    expect(line).toMatch(/^✗ send\s+500 raw_body_unavailable .* WRONG, expected 2xx/)
    expect(said).toMatch(/^ {2}the receiver said: .*express\.json\(\)/)
    const json = await runCli(['send', urls.parsed, '--json'], { env })
    expect((JSON.parse(json.stdout) as { requests: RequestJson[] }).requests[0]?.message).toMatch(/express\.json\(\)/)
  })

  it("prints a throwing handler's answer under its line, and a verdict that says what --expect asked for", async () => {
    const plain = await runCli(['send', urls.failing], { env })
    expect(plain.code).toBe(1)
    expect(plain.stdout).toMatch(
      /✗ send\s+500 handler_failed .*\n {2}the receiver said: The handler for email\.bounced threw; the event was released/,
    )
    const expected = await runCli(['send', urls.failing, '--expect', '5xx'], { env })
    expect(expected.code).toBe(0)
    expect(expected.stdout).toMatch(
      /✓ send\s+500 handler_failed .* right: 500 is 5xx, as --expect asked; without --expect, a correct receiver answers 2xx \(an authentic delivery is acknowledged\)$/m,
    )
    expect(expected.stdout).not.toContain('right: an authentic delivery is acknowledged')
    // A right line carries no message line.
    expect(expected.stdout).not.toContain('the receiver said')
    const wrong = await runCli(['send', urls.failing, '--expect', '401'], { env })
    expect(wrong.stdout).toContain('WRONG, expected 401 (--expect); without --expect, a correct receiver answers 2xx')
  })

  it('tells queued from handled for an inbox-mode receiver, in the line and in --json', async () => {
    const plain = await runCli(['send', urls.inbox], { env })
    expect(plain.code).toBe(0)
    expect(plain.stdout).toMatch(
      /✓ send\s+200 {2}queued .*right: an authentic delivery is acknowledged \(queued: the receiver is in inbox mode/,
    )
    const json = await runCli(['send', urls.inbox, '--duplicate', '--json'], { env })
    const requests = (JSON.parse(json.stdout) as { requests: RequestJson[] }).requests
    expect(requests.map((r) => [r.status, r.queued, r.duplicate])).toEqual([
      [200, true, false],
      [200, false, true],
    ])
  })
})
