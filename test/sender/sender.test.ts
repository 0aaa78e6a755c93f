/**
 * The faithful sender keeps the contract of SPEC.md: signed deliveries that the real
 * verifyWebhook accepts, a fresh signature per attempt, no redirects, the receiver timeout,
 * exponential backoff over 10 attempts, disable after 10 failures in a row, and the
 * management API's answers (keys and scopes, JSON, request ids, the 100-record cap, expiry).
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { checkEndpointUrl, isLoopbackHost, validateBaseUrl } from '@email-webhooks/core/api'
import {
  checkEndpointUrl as checkEndpointUrlFromTesting,
  createFaithfulSender,
  type FaithfulSender,
  listenSender,
  TEST_API_KEY,
} from '@email-webhooks/core/testing'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { scaled } from '../support/time.js'
import { type Reply, startReceiver } from './helpers.js'

const closers: Array<() => unknown> = []
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close()
})

async function setup(reply: (index: number) => Reply, options: Parameters<typeof createFaithfulSender>[0] = {}) {
  const sender = createFaithfulSender({ timeScale: 0.001, ...options })
  closers.push(() => sender.close())
  let secret = ''
  const receiver = await startReceiver(
    () => secret,
    (_post, i) => reply(i),
  )
  closers.push(() => receiver.close())
  const endpoint = sender.createEndpoint(receiver.url)
  secret = endpoint.secret
  return { sender, receiver, endpoint }
}

const api = (sender: FaithfulSender, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
  sender.fetch(
    new Request(`http://sender.test/v1${path}`, {
      method,
      headers: {
        authorization: `Bearer ${TEST_API_KEY}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...headers,
      },
      ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
    }),
  )

describe('faithful sender: deliveries', () => {
  it('delivers the envelope signed with the endpoint secret, webhook-id equal to the event id', async () => {
    const { sender, receiver, endpoint } = await setup(() => 200)
    const { event, deliveries } = sender.emit({ type: 'email.bounced' })
    await sender.idle()
    expect(receiver.posts).toHaveLength(1)
    expect(receiver.posts[0]).toMatchObject({ id: event.id, verified: true })
    expect(JSON.parse(receiver.posts[0]?.body ?? '')).toEqual(event)
    // The contract documents only `pending` as a state: the record says what happened in its documented fields.
    expect(sender.deliveries(endpoint.id)).toEqual([
      { id: deliveries[0]?.id, event_id: event.id, state: 'pending', attempts: 1, last_status: 200, next_attempt_at: null },
    ])
  })

  it("reports every record's state as pending by default (the contract's only documented value), its own states with states: 'descriptive'", async () => {
    for (const [states, expected] of [
      [undefined, ['pending', 'pending']],
      ['documented', ['pending', 'pending']],
      ['descriptive', ['failed', 'succeeded']],
    ] as const) {
      const { sender, endpoint } = await setup((i) => (i === 0 ? 500 : 200), { maxAttempts: 1, disableAfter: 100, states })
      sender.emit()
      await sender.idle()
      sender.emit()
      await sender.idle()
      // Newest first: the second delivery succeeded, the first spent its one attempt on a 500.
      const records = sender.deliveries(endpoint.id)
      expect(records.map((d) => [d.last_status, d.attempts])).toEqual([
        [200, 1],
        [500, 1],
      ])
      expect(records.map((d) => d.state).reverse()).toEqual(expected)
    }
    expect(() => createFaithfulSender({ states: 'own' as 'descriptive' })).toThrow(/states must be 'documented' .* or 'descriptive'/)
  })

  it('signs every attempt afresh with a fresh timestamp', async () => {
    const start = Date.now()
    let tick = 0
    const { sender, receiver } = await setup((i) => (i < 2 ? 500 : 200), { now: () => start + 1000 * tick++ })
    sender.emit()
    await sender.idle()
    expect(receiver.posts.map((p) => p.verified)).toEqual([true, true, true])
    expect(new Set(receiver.posts.map((p) => p.timestamp)).size).toBe(3)
    expect(new Set(receiver.posts.map((p) => p.signature)).size).toBe(3)
  })

  it('backs off exponentially (5 s doubling, time-scaled) over a budget of 10 attempts, then fails the delivery', async () => {
    const fixed = Date.now()
    const waits: number[] = []
    const { sender, receiver, endpoint } = await setup(() => 500, {
      timeScale: 0.0002,
      now: () => fixed,
      disableAfter: 100,
      onAttempt: () =>
        setImmediate(() => {
          const next = sender.deliveries(endpoint.id)[0]?.next_attempt_at
          if (next) waits.push(Date.parse(next) - fixed)
        }),
    })
    sender.emit()
    await sender.idle()
    expect(receiver.posts).toHaveLength(10)
    expect(waits).toEqual([1, 2, 4, 8, 16, 32, 64, 128, 256])
    expect(sender.deliveries(endpoint.id)[0]).toMatchObject({ attempts: 10, last_status: 500, next_attempt_at: null })
  })

  it('does not follow a redirect: a 3xx is a failed attempt and the target is never called', async () => {
    const target = await startReceiver(
      () => '',
      () => 200,
    )
    closers.push(() => target.close())
    const { sender } = await setup((i) => (i === 0 ? { redirect: target.url } : 200))
    sender.emit()
    await sender.idle()
    expect(target.posts).toHaveLength(0)
    expect(sender.attempts.map((a) => [a.status, a.ok, a.failure])).toEqual([
      [302, false, 'redirect'],
      [200, true, undefined],
    ])
  })

  it('counts a receiver slower than the timeout as a failure and retries', async () => {
    // 1 s per attempt: room for a real HTTP round trip on a loaded machine; the first answer waits 5 s.
    const { sender, receiver } = await setup((i) => (i === 0 ? { hangMs: 5_000 } : 200), { receiverTimeoutMs: 1_000 })
    sender.emit()
    await sender.idle()
    expect(sender.attempts.map((a) => [a.status, a.failure])).toEqual([
      [0, 'timeout'],
      [200, undefined],
    ])
    expect(receiver.posts).toHaveLength(2)
  })

  it('disables the endpoint after 10 consecutive failed attempts across deliveries and stops sending', async () => {
    const { sender, receiver, endpoint } = await setup(() => 503)
    for (let i = 0; i < 3; i++) sender.emit()
    await sender.idle()
    // Attempts already on the wire when the 10th failure lands still finish (at most one per other delivery).
    expect(receiver.posts.length).toBeGreaterThanOrEqual(10)
    expect(receiver.posts.length).toBeLessThanOrEqual(12)
    expect(sender.endpoint(endpoint.id)?.enabled).toBe(false)
    expect(sender.endpoint(endpoint.id)?.failures).toBe(receiver.posts.length)
    // None spent its 10 attempts: each waits, paused (no next attempt), for the endpoint to be enabled again.
    expect(sender.deliveries(endpoint.id).map((d) => [d.state, d.next_attempt_at])).toEqual([
      ['pending', null],
      ['pending', null],
      ['pending', null],
    ])
    // Events emitted while it is disabled get no delivery record.
    expect(sender.emit().deliveries).toEqual([])
  })

  it('counts the failures of attempts already in flight when the 10th disables the endpoint (12 at once: failures 12), starts none after, and the testing guide says so', async () => {
    // Backoff at its real 5 s: no retry starts before the endpoint is disabled, which pauses them all.
    // A 1 s timeout (300 ms before), stretched with TEST_TIME_SCALE: on a loaded machine (CI's Node 24
    // run) only 8 of the 12 had reached the receiver when their 300 ms ran out.
    const { sender, receiver, endpoint } = await setup(() => ({ hangMs: 3 * scaled(1_000) }), {
      receiverTimeoutMs: scaled(1_000),
      timeScale: 1,
    })
    for (let i = 0; i < 12; i++) sender.emit()
    await sender.idle()
    // All 12 first attempts were on their way before the first failure: each fails and counts.
    expect(receiver.posts).toHaveLength(12)
    expect(sender.attempts).toHaveLength(12)
    expect(sender.endpoint(endpoint.id)).toMatchObject({ enabled: false, failures: 12 })
    expect(readFileSync(join(import.meta.dirname, '../../docs/guides/testing-handlers.md'), 'utf8').replace(/\s+/g, ' ')).toContain(
      'attempts already in flight when the tenth failure disables it still end, and their failures count too',
    )
  })

  it('resumes the deliveries a disable paused when the endpoint is enabled again (PATCH), each with the attempts it had left', async () => {
    let healthy = false
    const { sender, receiver, endpoint } = await setup(() => (healthy ? 200 : 503), { maxAttempts: 20 })
    const ids = [0, 1, 2, 3].map(() => sender.emit().event.id)
    await sender.idle()
    expect(sender.endpoint(endpoint.id)?.enabled).toBe(false)
    const paused = sender.deliveries(endpoint.id).filter((d) => d.last_status !== 200)
    expect(paused.length).toBeGreaterThan(0)
    healthy = true
    expect((await api(sender, 'PATCH', `/webhooks/${endpoint.id}`, { enabled: true })).status).toBe(200)
    await sender.idle()
    // No retry by hand: the sender resumed each paused delivery, and the receiver got it.
    const now = new Map(sender.deliveries(endpoint.id).map((d) => [d.id, d]))
    expect(paused.map((d) => now.get(d.id)?.last_status)).toEqual(paused.map(() => 200))
    expect(new Set(receiver.posts.filter((p) => p.verified).map((p) => p.id))).toEqual(new Set(ids))
  })

  it("stamps an email's events with strictly increasing created_at, even a thousand emitted in a row", () => {
    const sender = createFaithfulSender()
    const emailId = crypto.randomUUID()
    const times = Array.from({ length: 1000 }, () =>
      Date.parse(sender.emit({ type: 'email.deferred', data: { id: emailId } }).event.created_at),
    )
    for (let i = 1; i < times.length; i++) expect(times[i] as number).toBeGreaterThan(times[i - 1] as number)
    // Another email's events start from the clock, not after this one's.
    expect(Date.parse(sender.emit({ data: { id: crypto.randomUUID() } }).event.created_at)).toBeLessThanOrEqual(Date.now())
  })

  it("waits exactly the contract's backoff (no jitter) and ignores a receiver's Retry-After, which the contract does not promise to honour", async () => {
    const fixed = Date.now()
    const { sender, receiver, endpoint } = await setup((i) => (i < 2 ? { status: 429, retryAfter: '3600' } : 200), {
      timeScale: 0.001,
      now: () => fixed,
      onAttempt: () =>
        setImmediate(() => {
          const next = sender.deliveries(endpoint.id)[0]?.next_attempt_at
          if (next) waits.push(Date.parse(next) - fixed)
        }),
    })
    const waits: number[] = []
    sender.emit()
    await sender.idle(2_000)
    expect(receiver.posts).toHaveLength(3)
    expect(waits).toEqual([5, 10])
  })

  it('checks for idleness without walking its delivery table after each attempt', async () => {
    const sender = createFaithfulSender({ fetch: async () => new Response(null, { status: 200 }) })
    closers.push(() => sender.close())
    const { id } = sender.createEndpoint('http://127.0.0.1:9/hooks')
    for (let i = 0; i < 1500; i++) sender.emit()
    await sender.idle()
    // Each attempt used to copy every delivery record into an array to look for a scheduled one.
    let walks = 0
    const big = function (this: Map<unknown, unknown>) {
      if (this.size >= 1000) walks++
    }
    const spies = (['values', 'entries', 'forEach', Symbol.iterator] as const).map((name) => {
      const original = Map.prototype[name] as (...args: unknown[]) => unknown
      return vi.spyOn(Map.prototype, name).mockImplementation(function (this: Map<unknown, unknown>, ...args: unknown[]) {
        big.call(this)
        return original.apply(this, args)
      } as never)
    })
    try {
      for (let i = 0; i < 500; i++) sender.emit()
      await sender.idle()
    } finally {
      for (const spy of spies) spy.mockRestore()
    }
    expect(sender.attempts).toHaveLength(2000)
    expect(walks).toBe(0)
    expect(sender.deliveries(id)).toHaveLength(2000)
  })

  it('resets the failure counter on a success', async () => {
    const replies = [500, 500, 200, 500, 500, 500]
    const { sender, endpoint } = await setup((i) => replies[i] ?? 200, { disableAfter: 3 })
    sender.emit()
    await sender.idle()
    expect(sender.endpoint(endpoint.id)).toMatchObject({ enabled: true, failures: 0 })
    sender.emit()
    await sender.idle()
    expect(sender.endpoint(endpoint.id)).toMatchObject({ enabled: false, failures: 3 })
    expect(sender.attempts).toHaveLength(6)
  })

  it('repeats deliveries when asked, each send freshly signed', async () => {
    const { sender, receiver } = await setup(() => 200, { repeatProbability: 1 })
    const { event } = sender.emit()
    await sender.idle()
    expect(receiver.posts.map((p) => [p.id, p.verified])).toEqual([
      [event.id, true],
      [event.id, true],
    ])
    expect(sender.attempts.map((a) => a.repeat)).toEqual([false, true])
  })

  it('reorders first attempts within the window', async () => {
    let r = 1
    const { sender, receiver } = await setup(() => 200, { reorderWindowMs: 300, random: () => (r -= 0.2) })
    const ids = [1, 2, 3, 4].map(() => sender.emit().event.id)
    await sender.idle()
    expect(receiver.posts.map((p) => p.id)).toEqual([...ids].reverse())
  })
})

describe('faithful sender: management API', () => {
  it('answers 401 invalid_api_key and 403 missing_scope with the error shape and X-Request-Id', async () => {
    const sender = createFaithfulSender({ apiKeys: { k_read: ['emails:read'], [TEST_API_KEY]: ['webhooks:manage'] } })
    for (const [auth, status, code] of [
      [undefined, 401, 'invalid_api_key'],
      ['Bearer nope', 401, 'invalid_api_key'],
      ['Basic x', 401, 'invalid_api_key'],
      ['Bearer k_read', 403, 'missing_scope'],
    ] as const) {
      const headers = new Headers(auth ? { authorization: auth } : {})
      const res = await sender.fetch(new Request('http://sender.test/v1/webhooks', { headers }))
      const body = (await res.json()) as { error: { code: string; message: string; requestId: string } }
      expect([res.status, body.error.code]).toEqual([status, code])
      expect(body.error.requestId).toBe(res.headers.get('x-request-id'))
      expect(body.error.requestId).toMatch(/^[0-9a-f-]{36}$/)
    }
  })

  it('creates an endpoint, shows its secret only then, and lists it without the secret', async () => {
    const sender = createFaithfulSender()
    const created = await api(sender, 'POST', '/webhooks', { url: 'http://127.0.0.1:9/hooks' })
    expect(created.status).toBe(201)
    expect(created.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/)
    const { id, secret } = (await created.json()) as { id: string; secret: string }
    const listed = await (await api(sender, 'GET', '/webhooks')).text()
    expect(JSON.parse(listed)).toEqual([
      { id, url: 'http://127.0.0.1:9/hooks', enabled: true, failures: 0, created_at: expect.any(String) },
    ])
    expect(listed).not.toContain(secret)
  })

  it('refuses bodies that are not JSON (415), bad JSON (400) and invalid fields (400 with fields)', async () => {
    const sender = createFaithfulSender()
    const codes = async (res: Response) => [res.status, ((await res.json()) as { error: { code: string } }).error.code]
    expect(await codes(await api(sender, 'POST', '/webhooks', 'url=x', { 'content-type': 'application/x-www-form-urlencoded' }))).toEqual([
      415,
      'json_required',
    ])
    expect(await codes(await api(sender, 'POST', '/webhooks', '{'))).toEqual([400, 'invalid_json'])
    const { id } = sender.createEndpoint('http://127.0.0.1:9/hooks')
    const res = await api(sender, 'PATCH', `/webhooks/${id}`, { enabled: 'yes' })
    expect(await res.json()).toMatchObject({
      error: { code: 'validation_error', fields: [{ path: 'enabled', message: expect.any(String) }] },
    })
  })

  it('applies the service URL rules when local URLs are not allowed', async () => {
    const sender = createFaithfulSender({ allowLocalUrls: false })
    const code = async (url: string) =>
      ((await (await api(sender, 'POST', '/webhooks', { url })).json()) as { error?: { code: string } }).error?.code
    expect(await code('http://127.0.0.1:3000/hooks')).toBe('invalid_webhook')
    expect(await code('https://hooks.example.com:8443/x')).toBe('unsafe_webhook')
    expect(await code('https://10.0.0.1/x')).toBe('unsafe_webhook')
    expect(await code('https://user:pw@hooks.example.com/x')).toBe('invalid_webhook')
    expect(await code('https://hooks.example.com/x#frag')).toBe('invalid_webhook')
    expect(await code(`https://hooks.example.com/${'a'.repeat(2000)}`)).toBe('validation_error')
    expect(await code('https://hooks.example.com/x')).toBeUndefined()
  })

  it('counts the same hosts as loopback as the API client does: localhost, 127.0.0.0/8 and [::1]', async () => {
    const sender = createFaithfulSender()
    const hosts = ['localhost', '127.0.0.1', '127.0.0.2', '127.1.2.3', '[::1]', '10.0.0.1', '128.0.0.1', 'hooks.example.com']
    const senderAccepts = async (host: string) =>
      (await api(sender, 'POST', '/webhooks', { url: `http://${host}:3000/hooks` })).status === 201
    const clientAccepts = (host: string) => {
      try {
        return validateBaseUrl(`http://${host}:3000/v1`) !== ''
      } catch {
        return false
      }
    }
    const verdicts = await Promise.all(hosts.map(async (host) => [host, await senderAccepts(host), clientAccepts(host)]))
    expect(verdicts).toEqual(hosts.map((host, i) => [host, i < 5, i < 5]))
    expect(hosts.map((host) => isLoopbackHost(new URL(`http://${host}`).hostname))).toEqual(hosts.map((_, i) => i < 5))
    // The rule is core's, exported from the API entry and still from the testing kit.
    for (const url of ['https://172.16.5.4/x', 'http://127.0.0.2:3000/x', 'https://hooks.example.com/x'])
      expect([checkEndpointUrlFromTesting(url, false), checkEndpointUrlFromTesting(url, true)]).toEqual([
        checkEndpointUrl(url, false),
        checkEndpointUrl(url, true),
      ])
  })

  it('PATCH re-enables a disabled endpoint and resets its counter; unknown ids are 404 not_found', async () => {
    const { sender, endpoint } = await setup(() => 500)
    sender.emit()
    sender.emit()
    await sender.idle()
    expect(sender.endpoint(endpoint.id)).toMatchObject({ enabled: false, failures: 10 })
    expect((await api(sender, 'PATCH', `/webhooks/${endpoint.id}`, { enabled: true })).status).toBe(200)
    expect(sender.endpoint(endpoint.id)).toMatchObject({ enabled: true, failures: 0 })
    const missing = await api(sender, 'PATCH', `/webhooks/${crypto.randomUUID()}`, { enabled: true })
    expect([missing.status, ((await missing.json()) as { error: { code: string } }).error.code]).toEqual([404, 'not_found'])
  })

  it('lists at most 100 delivery records, newest first', async () => {
    const { sender, endpoint } = await setup(() => 200)
    const ids = Array.from({ length: 105 }, () => sender.emit().event.id)
    await sender.idle()
    const list = (await (await api(sender, 'GET', `/webhooks/${endpoint.id}/deliveries`)).json()) as Array<{ event_id: string }>
    expect(list.map((d) => d.event_id)).toEqual(ids.slice(5).reverse())
  })

  it('retry requeues a failed delivery; past the payload lifetime it answers 404 delivery_expired', async () => {
    let clock = Date.now()
    let healthy = false
    const { sender, endpoint, receiver } = await setup(() => (healthy ? 200 : 500), {
      now: () => clock,
      maxAttempts: 1,
      payloadLifetimeMs: 60_000,
    })
    const first = sender.emit().deliveries[0]?.id as string
    const second = sender.emit().deliveries[0]?.id as string
    await sender.idle()
    healthy = true
    const ok = await api(sender, 'POST', `/webhooks/${endpoint.id}/retry`, { deliveryId: first })
    expect([ok.status, await ok.json()]).toEqual([200, { ok: true }])
    await sender.idle()
    expect(receiver.posts.filter((p) => p.verified)).toHaveLength(3)
    clock += 60_001
    const expired = await api(sender, 'POST', `/webhooks/${endpoint.id}/retry`, { deliveryId: second })
    expect([expired.status, ((await expired.json()) as { error: { code: string } }).error.code]).toEqual([404, 'delivery_expired'])
  })

  it('answers 400 validation_error to a path with a malformed percent escape, over HTTP too', async () => {
    const { sender } = await setup(() => 200)
    for (const path of ['/webhooks/%E0%A4%A/deliveries', '/webhooks/%zz']) {
      const res = await api(sender, 'GET', path)
      expect([res.status, ((await res.json()) as { error: { code: string } }).error.code]).toEqual([400, 'validation_error'])
    }
    const listener = await listenSender(sender)
    closers.push(() => listener.close())
    const res = await fetch(`${listener.baseUrl}/webhooks/%E0%A4%A/retry`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TEST_API_KEY}`, 'content-type': 'application/json' },
      body: '{"deliveryId":"d"}',
    })
    expect(res.status).toBe(400)
  })

  it('serves the API on 127.0.0.1 for other processes', async () => {
    const sender = createFaithfulSender()
    const listener = await listenSender(sender)
    closers.push(() => listener.close())
    expect(listener.baseUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1$/)
    const res = await fetch(`${listener.baseUrl}/webhooks`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TEST_API_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url: 'https://hooks.example.com/x' }),
    })
    expect(res.status).toBe(201)
    expect(sender.endpoint(((await res.json()) as { id: string }).id)?.url).toBe('https://hooks.example.com/x')
  })
})
