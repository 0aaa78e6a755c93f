import { mkdtempSync, rmSync } from 'node:fs'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createSignedDelivery, TEST_SECRET } from '@email-webhooks/core/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createApp } from '../src/app.js'

describe('examples/express', () => {
  const dir = mkdtempSync(join(tmpdir(), 'example-express-'))
  const bounced: string[] = []
  let server: import('node:http').Server
  let url = ''
  beforeAll(async () => {
    process.env.EMAIL_WEBHOOKS_DB = join(dir, 'dedup.db')
    const app = createApp({
      secret: TEST_SECRET,
      actions: { markBounced: (id: string) => void bounced.push(id), suppress: () => {}, markDelivered: () => {} },
    })
    server = app.listen(0, '127.0.0.1')
    await new Promise<void>((resolve) => server.once('listening', () => resolve()))
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  })
  afterAll(() => {
    server.close()
    delete process.env.EMAIL_WEBHOOKS_DB
    rmSync(dir, { recursive: true, force: true })
  })

  it('marks a bounced email once, even when the event is delivered twice, using the default SQLite store', async () => {
    const delivery = await createSignedDelivery({ type: 'email.bounced' })
    const first = await fetch(`${url}/hooks`, { method: 'POST', headers: delivery.headers, body: delivery.body })
    const again = await fetch(`${url}/hooks`, { method: 'POST', headers: delivery.headers, body: delivery.body })
    expect([first.status, await first.json(), again.status, await again.json()]).toEqual([
      200,
      { ok: true },
      200,
      { ok: true, duplicate: true },
    ])
    expect(bounced).toEqual([delivery.event.data.id])
  })

  it('keeps JSON routes mounted after the webhook route working', async () => {
    expect(await (await fetch(`${url}/health`)).json()).toEqual({ ok: true })
  })
})
