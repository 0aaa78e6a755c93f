/**
 * examples/cloudflare-queues in workerd (Miniflare from npm, on the Node 24 from npm), with a real
 * queue between the Worker's fetch and its queue consumer: a delivery is answered 200 queued and its
 * handler runs once from the queue; a redelivery makes a second message (Queues do not deduplicate),
 * which the consumer acknowledges without running the handler (the D1 dedup store knows the event).
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { createSignedDelivery, TEST_SECRET } from '@email-webhooks/core/testing'
import { afterAll, describe, expect, it } from 'vitest'
import { NODE_ONLY_FILE } from '../../../test/runtimes/example-deliveries.js'
import { miniflareDir, runtimeBin, startServer } from '../../../test/runtimes/runtimes.js'
import { buildWorker } from '../../cloudflare-worker/scripts/build.mjs'

const NODE24 = await runtimeBin('node24')
const MINIFLARE_DIR = await miniflareDir()
const exampleDir = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const scratch = mkdtempSync(join(tmpdir(), 'example-queues-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

async function waitForOutput(output: () => string, text: string, count: number, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (output().split(text).length - 1 < count) {
    if (Date.now() > deadline) throw new Error(`"${text}" not printed ${count} times within ${timeoutMs} ms:\n${output()}`)
    await new Promise((done) => setTimeout(done, 100))
  }
}

describe('examples/cloudflare-queues', () => {
  it('queues each delivery, runs the handler once from the queue, and acknowledges a redelivery as a duplicate', async () => {
    const file = join(scratch, 'worker.js')
    const meta = await buildWorker(join(exampleDir, 'src/worker.js'), file)
    expect(Object.keys(meta.inputs).filter((f) => NODE_ONLY_FILE.test(f))).toEqual([])
    const server = await startServer(NODE24, ['scripts/serve.mjs', file], {
      cwd: exampleDir,
      env: { ...process.env, EMAIL_WEBHOOK_SECRET: TEST_SECRET, D1_PERSIST: join(scratch, 'd1'), NO_COLOR: '1', MINIFLARE_DIR },
      timeoutMs: 60_000,
    })
    try {
      const delivery = await createSignedDelivery({ type: 'email.bounced' })
      const send = async (d: typeof delivery) =>
        (await fetch(`${server.url}/hooks`, { method: 'POST', headers: d.headers, body: d.body })).json()
      expect(await send(delivery)).toEqual({ ok: true, queued: true })
      const line = `email ${delivery.event.data.id} bounced`
      await waitForOutput(server.output, line, 1)
      // The sender's redelivery: queued again (a second message), handled as a duplicate from the store.
      expect(await send(await createSignedDelivery({ event: delivery.event }))).toEqual({ ok: true, queued: true })
      const other = await createSignedDelivery({ type: 'email.bounced' })
      expect(await send(other)).toEqual({ ok: true, queued: true })
      // Messages are consumed in order within a batch: once the later event ran, the redelivery was consumed.
      await waitForOutput(server.output, `email ${other.event.data.id} bounced`, 1)
      expect(server.output().split(line)).toHaveLength(2)
      expect(server.output()).not.toMatch(/in_flight|handler_failed|store_unavailable/)
    } finally {
      await server.stop()
    }
  }, 90_000)
})
