/**
 * What every framework recipe is tested with (Next.js, SvelteKit, Astro, Nuxt/h3, NestJS): real
 * `Request`s of signed deliveries, handed to the recipe's exported handler or sent over HTTP to the
 * framework serving it. Valid, duplicate, tampered, stale and unknown-type deliveries, a body whose
 * exact bytes (BOM, invalid UTF-8) only verify if nothing decoded them, and a streamed body past
 * 1 MiB; the recipe's `markBounced` must have run exactly once per new bounce.
 */
import { signWebhook } from '@email-webhooks/core'
import { createEvent, createSignedDelivery, TEST_SECRET } from '@email-webhooks/core/testing'
import { expect } from 'vitest'

export type Send = (request: Request) => Promise<Response>

const URL_BASE = 'http://localhost'

async function answer(response: Response): Promise<[number, unknown]> {
  const json = (await response.json()) as { ok?: boolean; duplicate?: boolean; error?: { code: string } }
  return [response.status, json.error ? { error: { code: json.error.code } } : json]
}

/** A signed bounce whose body starts with a BOM and holds a byte that is not UTF-8. */
export async function oddBytesDelivery(): Promise<{ headers: Record<string, string>; body: Uint8Array<ArrayBuffer>; emailId: string }> {
  const event = createEvent('email.bounced')
  const text = new TextEncoder().encode(JSON.stringify(event).replace('"data":{', '"data":{"note":"X",'))
  const body = new Uint8Array([0xef, 0xbb, 0xbf, ...text])
  body[new TextDecoder().decode(text).indexOf('"X"') + 4] = 0xff
  const { headers } = await signWebhook({ secret: TEST_SECRET, body, id: event.id, timestamp: Math.floor(Date.now() / 1000) })
  return { headers: { ...headers, 'content-type': 'application/json' }, body, emailId: event.data.id }
}

/** A body of `size` bytes streamed in 64 KiB pieces, with no content-length. */
function endless(size: number): ReadableStream<Uint8Array> {
  let sent = 0
  return new ReadableStream({
    pull(controller) {
      if (sent >= size) return controller.close()
      controller.enqueue(new Uint8Array(64 * 1024).fill(0x20))
      sent += 64 * 1024
    },
  })
}

/**
 * Sends the recipe's deliveries through `send` (to `path`) and checks every answer and that
 * `bounced()` lists each new bounce once, in order. `tooLarge: 'framework'` when the framework's own
 * body parser refuses a large body before the recipe's code runs: then only the 413 is checked.
 */
export async function expectWebRecipe(
  send: Send,
  bounced: () => readonly string[],
  path = '/hooks',
  options: { tooLarge?: 'receiver' | 'framework' } = {},
): Promise<void> {
  const post = (headers: Record<string, string>, body: BodyInit) =>
    send(new Request(`${URL_BASE}${path}`, { method: 'POST', headers, body }))
  const valid = await createSignedDelivery({ type: 'email.bounced' })
  const duplicate = await createSignedDelivery({ event: valid.event })
  const other = await createSignedDelivery({ type: 'email.bounced' })
  const stale = await createSignedDelivery({ type: 'email.bounced', timestamp: Math.floor(Date.now() / 1000) - 301 })
  const unknown = await createSignedDelivery({ type: 'organization.updated' })
  const json = { 'content-type': 'application/json' }
  expect(await answer(await post({ ...valid.headers, ...json }, valid.body))).toEqual([200, { ok: true }])
  expect(await answer(await post({ ...duplicate.headers, ...json }, duplicate.body))).toEqual([200, { ok: true, duplicate: true }])
  const tampered = other.body.replace('email.bounced', 'email.queued')
  expect(await answer(await post({ ...other.headers, ...json }, tampered))).toEqual([401, { error: { code: 'signature_mismatch' } }])
  expect(await answer(await post({ ...stale.headers, ...json }, stale.body))).toEqual([401, { error: { code: 'timestamp_too_old' } }])
  expect(await answer(await post({ ...unknown.headers, ...json }, unknown.body))).toEqual([200, { ok: true }])
  const odd = await oddBytesDelivery()
  expect(await answer(await post(odd.headers, odd.body))).toEqual([200, { ok: true }])
  const large = await send(
    new Request(`${URL_BASE}${path}`, {
      method: 'POST',
      headers: { ...valid.headers, ...json },
      body: endless(2 * 1024 * 1024),
      duplex: 'half',
    } as RequestInit),
  )
  if (options.tooLarge === 'framework') expect(large.status).toBe(413)
  else expect(await answer(large)).toEqual([413, { error: { code: 'body_too_large' } }])
  expect(bounced()).toEqual([valid.event.data.id, odd.emailId])
}

/** A `Send` that forwards each request over HTTP to `base` (a framework's real listener), streaming the body. */
export function overHttp(base: string): Send {
  return (request) =>
    fetch(new URL(new URL(request.url).pathname, base), {
      method: request.method,
      headers: request.headers,
      body: request.body,
      duplex: 'half',
      signal: AbortSignal.timeout(10_000),
    } as RequestInit)
}
