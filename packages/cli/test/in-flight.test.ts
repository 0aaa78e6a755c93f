// The 409 line: a receiver built on core's fetch handler whose handler is still running for an
// event answers 409 in_flight with Retry-After to a second copy; the CLI shows both and exits 1.

import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { createServer, type Server } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { emailWebhook, MemoryDedupStore } from '@email-webhooks/core'
import { createEvent, createSignedDelivery } from '@email-webhooks/core/testing'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { runCli, SECRET } from './helpers/cli.js'

let server: Server
let url: string
let dir: string
let release: () => void = () => {}
let entered: () => void = () => {}
const gate = new Promise<void>((done) => {
  release = done
})
const handlerEntered = new Promise<void>((done) => {
  entered = done
})

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cli-inflight-'))
  const handle = emailWebhook(
    SECRET,
    {
      'email.bounced': async () => {
        entered()
        await gate
      },
    },
    // The handler waits for the CLI's run, which took longer than the 7 s default deadline at a
    // load average of 19: a deadline no run of the CLI reaches.
    { store: new MemoryDedupStore(), handlerTimeoutMs: 120_000, leaseMs: 180_000 },
  )
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

afterAll(async () => {
  release()
  await new Promise((done) => server.close(done))
  await rm(dir, { recursive: true, force: true })
})

it('shows 409 in_flight with its Retry-After for a copy of an event still being handled, and exits 1', async () => {
  const event = createEvent('email.bounced')
  const first = await createSignedDelivery({ secret: SECRET, event })
  const firstAnswer = fetch(url, { method: 'POST', headers: first.headers, body: first.body })
  await handlerEntered
  const file = join(dir, 'event.json')
  await writeFile(file, JSON.stringify(event))
  const result = await runCli(['send', url, '--file', file], { env: { EMAIL_WEBHOOK_SECRET: SECRET } })
  expect(result.code).toBe(1)
  expect(result.stdout).toMatch(
    new RegExp(`✗ send\\s+409 in_flight {2}retry-after \\d+ {2}.* ms {2}email\\.bounced ${event.id} {2}not 2xx, so the sender retries it`),
  )
  release()
  expect((await firstAnswer).status).toBe(200)
})
