/**
 * The management API client against the faithful sender: every operation, typed errors with
 * advice (scope, key, unknown endpoint), full-jitter backoff on 429 and 5xx with Retry-After,
 * bounded retries, timeouts, and the API key absent from every error however it is printed.
 */
import { inspect } from 'node:util'
import { createWebhooksClient, EmailApiError, type RetryInfo, type WebhooksClientOptions } from '@email-webhooks/core/api'
import { createFaithfulSender, listenSender } from '@email-webhooks/core/testing'
import { afterEach, describe, expect, it } from 'vitest'

const KEY = `ek_live_${crypto.randomUUID().replaceAll('-', '')}`
const READ_ONLY_KEY = `ek_live_${crypto.randomUUID().replaceAll('-', '')}`
const WEBHOOKS_ONLY_KEY = `ek_live_${crypto.randomUUID().replaceAll('-', '')}`
const closers: Array<() => unknown> = []
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close()
})

function setup(options: Partial<WebhooksClientOptions> = {}) {
  // Deliveries never leave the process: the receiver here is a stand-in that answers 200.
  const sender = createFaithfulSender({
    apiKeys: { [KEY]: ['webhooks:manage', 'emails:read'], [READ_ONLY_KEY]: ['emails:read'], [WEBHOOKS_ONLY_KEY]: ['webhooks:manage'] },
    fetch: async () => Response.json({ ok: true }),
  })
  closers.push(() => sender.close())
  const sent: Request[] = []
  const client = createWebhooksClient({
    apiKey: KEY,
    baseUrl: 'https://api.sender.test/v1',
    fetch: async (input, init) => {
      const request = new Request(input, init)
      sent.push(request.clone())
      return sender.fetch(request)
    },
    ...options,
  })
  return { sender, client, sent }
}

async function failure(promise: Promise<unknown>): Promise<EmailApiError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  )
  expect(error).toBeInstanceOf(EmailApiError)
  return error as EmailApiError
}

/** Every way an error gets printed or serialised, cause chain included. */
function renderings(error: Error): string[] {
  const out = [String(error), error.message, error.stack ?? '', JSON.stringify(error), inspect(error, { depth: null, showHidden: true })]
  let cause: unknown = error.cause
  while (cause instanceof Error) {
    out.push(String(cause), cause.message, cause.stack ?? '', inspect(cause, { depth: null, showHidden: true }))
    cause = cause.cause
  }
  return out
}

describe('webhooks client: operations', () => {
  it('creates, lists, disables, enables, lists deliveries and retries, with bearer auth, JSON and request ids', async () => {
    const { sender, client, sent } = setup()
    const created = await client.createEndpoint('https://hooks.example.com/email')
    expect(created).toEqual({ id: expect.any(String), secret: expect.stringMatching(/^whsec_/), requestId: expect.any(String) })
    expect((await client.listEndpoints()).endpoints).toEqual([
      { id: created.id, url: 'https://hooks.example.com/email', enabled: true, failures: 0, created_at: expect.any(String) },
    ])
    expect(await client.disableEndpoint(created.id)).toEqual({ ok: true, requestId: expect.any(String) })
    expect(sender.endpoint(created.id)?.enabled).toBe(false)
    await client.enableEndpoint(created.id)
    expect(sender.endpoint(created.id)?.enabled).toBe(true)
    const { event } = sender.emit()
    await sender.idle()
    const { deliveries } = await client.listDeliveries(created.id)
    expect(deliveries.map((d) => d.event_id)).toEqual([event.id])
    const retried = await client.retryDelivery(created.id, deliveries[0]?.id as string)
    expect(retried.requestId).toBe(sender.apiRequests.at(-1)?.requestId)
    expect(sent.map((r) => [r.method, new URL(r.url).pathname, r.headers.get('authorization') === `Bearer ${KEY}`])).toEqual([
      ['POST', '/v1/webhooks', true],
      ['GET', '/v1/webhooks', true],
      ['PATCH', `/v1/webhooks/${created.id}`, true],
      ['PATCH', `/v1/webhooks/${created.id}`, true],
      ['GET', `/v1/webhooks/${created.id}/deliveries`, true],
      ['POST', `/v1/webhooks/${created.id}/retry`, true],
    ])
    expect(await sent[5]?.json()).toEqual({ deliveryId: deliveries[0]?.id })
    expect(sent[5]?.headers.get('content-type')).toBe('application/json')
  })
})

describe('webhooks client: getEmail (GET /emails/{id}, scope emails:read)', () => {
  it('returns the email typed as the service documents it, keeping fields the service adds', async () => {
    const paths: string[] = []
    const { sender, client } = setup({
      fetch: async (input, init) => {
        paths.push(new URL(String(input)).pathname)
        const answer = await sender.fetch(new Request(input, init))
        const email = (await answer.json()) as Record<string, unknown>
        return Response.json(
          { ...email, tracking: { opens: 0 } },
          { headers: { 'x-request-id': answer.headers.get('x-request-id') ?? '' } },
        )
      },
    })
    const email = crypto.randomUUID()
    const { event } = sender.emit({ type: 'email.bounced', data: { id: email, recipient: 'ann@example.com' } })
    const read = await client.getEmail(email.toUpperCase())
    expect(read).toEqual({ found: true, requestId: expect.stringMatching(/^[0-9a-f-]{36}$/), email: expect.any(Object) })
    if (!read.found) throw new Error('unreachable')
    expect(read.email).toMatchObject({
      id: email,
      state: 'bounced',
      tracking: { opens: 0 },
      events: [{ type: 'email.bounced', created_at: event.created_at, details: { recipient: 'ann@example.com' } }],
    })
    expect(paths).toEqual([`/v1/emails/${email.toUpperCase()}`])
  })

  it('resolves a 404 to { found: false } (outside retention, or not this organization), and refuses an id that is not a UUID', async () => {
    const { client, sent } = setup()
    expect(await client.getEmail(crypto.randomUUID())).toEqual({ found: false, code: 'not_found', requestId: expect.any(String) })
    for (const id of ['', 'nope', '../webhooks', `${crypto.randomUUID()}/x`]) await expect(client.getEmail(id)).rejects.toThrow(TypeError)
    expect(sent).toHaveLength(1)
  })

  it('403 missing_scope names the scope emails:read; an answer without an id and an events list is invalid_response', async () => {
    const { client } = setup({ apiKey: WEBHOOKS_ONLY_KEY })
    const error = await failure(client.getEmail(crypto.randomUUID()))
    expect([error.status, error.code]).toEqual([403, 'missing_scope'])
    expect(error.message).toContain('lacks the scope emails:read')
    const odd = setup({ fetch: async () => Response.json({ id: crypto.randomUUID(), events: 'none' }) })
    expect((await failure(odd.client.getEmail(crypto.randomUUID()))).code).toBe('invalid_response')
  })
})

describe('webhooks client: errors', () => {
  it('403 missing_scope names the scope webhooks:manage', async () => {
    const { client } = setup({ apiKey: READ_ONLY_KEY })
    const error = await failure(client.listEndpoints())
    expect([error.status, error.code, error.attempts]).toEqual([403, 'missing_scope', 1])
    expect(error.message).toContain('webhooks:manage')
    expect(error.requestId).toMatch(/^[0-9a-f-]{36}$/)
  })

  it('401 invalid_api_key says the key is invalid without printing it', async () => {
    const { client } = setup({ apiKey: 'ek_live_revoked_0123456789' })
    const error = await failure(client.listEndpoints())
    expect([error.status, error.code]).toEqual([401, 'invalid_api_key'])
    expect(error.message).toMatch(/API key was refused.*invalid or revoked/)
    expect(renderings(error).join('\n')).not.toContain('ek_live_revoked_0123456789')
  })

  it('404 on an unknown endpoint says there is no such endpoint', async () => {
    const { client } = setup()
    const id = crypto.randomUUID()
    for (const call of [client.enableEndpoint(id), client.listDeliveries(id)]) {
      const error = await failure(call)
      expect([error.status, error.code]).toEqual([404, 'not_found'])
      expect(error.message).toContain(`no webhook endpoint with id ${id}`)
    }
  })

  it('400 keeps the validation fields and the service message', async () => {
    const { client } = setup()
    const error = await failure(client.createEndpoint('not a url'))
    expect([error.status, error.code]).toEqual([400, 'validation_error'])
    expect(error.fields).toEqual([{ path: 'url', message: 'url must be a URI' }])
    expect(error.message).toContain('url: url must be a URI')
    expect(error.toJSON()).toMatchObject({ status: 400, code: 'validation_error', requestId: error.requestId, fields: error.fields })
  })

  it('refuses a base URL that does not end in /v1, is not HTTPS, or carries credentials, and a malformed key', () => {
    const make =
      (baseUrl: string, apiKey = KEY) =>
      () =>
        createWebhooksClient({ apiKey, baseUrl })
    expect(make('https://api.example.com/v2')).toThrow(/must end in \/v1/)
    expect(make('http://api.example.com/v1')).toThrow(/https/)
    expect(make('https://u:p@api.example.com/v1')).toThrow(/credentials/)
    expect(make('https://api.example.com/v1?x=1')).toThrow(/query/)
    expect(make('nope')).toThrow(/not a URL/)
    expect(createWebhooksClient({ apiKey: KEY, baseUrl: 'http://127.0.0.1:8080/v1/' }).baseUrl).toBe('http://127.0.0.1:8080/v1')
    expect(make('https://api.example.com/v1', '')).toThrow(/apiKey is missing/)
    const spaced = `${KEY} `
    expect(make('https://api.example.com/v1', spaced)).toThrow(/white space/)
    try {
      make('https://api.example.com/v1', spaced)()
    } catch (e) {
      expect(String(e)).not.toContain(KEY)
    }
  })
})

describe('webhooks client: backoff, retries and timeouts', () => {
  it('honours Retry-After on 429 and backs off with full jitter on 503, then succeeds', async () => {
    const retries: RetryInfo[] = []
    const { sender, client } = setup({ random: () => 0.5, backoffBaseMs: 40, onRetry: (info) => retries.push(info) })
    sender.injectApiFaults({ status: 429, retryAfter: '1' }, { status: 503 }, { status: 502 })
    const started = Date.now()
    const { endpoints } = await client.listEndpoints()
    expect(endpoints).toEqual([])
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000)
    expect(retries).toEqual([
      { attempt: 1, delayMs: 1000, status: 429, code: 'rate_limited', fromRetryAfter: true },
      { attempt: 2, delayMs: 40, status: 503, code: 'internal_error', fromRetryAfter: false },
      { attempt: 3, delayMs: 80, status: 502, code: 'internal_error', fromRetryAfter: false },
    ])
    expect(sender.apiRequests.map((r) => r.status)).toEqual([429, 503, 502, 200])
  })

  it('caps the jittered wait at backoffMaxMs', async () => {
    const retries: RetryInfo[] = []
    const { sender, client } = setup({
      random: () => 0.999,
      backoffBaseMs: 10,
      backoffMaxMs: 25,
      maxRetries: 3,
      onRetry: (info) => retries.push(info),
    })
    sender.injectApiFaults({ status: 500 }, { status: 500 }, { status: 500 })
    await client.listEndpoints()
    expect(retries.map((r) => r.delayMs)).toEqual([9, 19, 24])
  })

  it('stops after maxRetries and reports the last answer and the attempts', async () => {
    const { sender, client } = setup({ maxRetries: 2, backoffBaseMs: 1 })
    sender.injectApiFaults(
      { status: 503, code: 'recovery_maintenance' },
      { status: 503, code: 'recovery_maintenance' },
      { status: 503, code: 'recovery_maintenance' },
      { status: 503 },
    )
    const error = await failure(client.listEndpoints())
    expect([error.status, error.code, error.attempts]).toEqual([503, 'recovery_maintenance', 3])
    expect(error.message).toMatch(/temporarily unavailable.*after 3 attempts.*Try again later/)
    expect(sender.apiRequests).toHaveLength(3)
  })

  it('gives up at once when Retry-After is longer than maxRetryAfterMs', async () => {
    const { sender, client } = setup({ maxRetryAfterMs: 5_000 })
    sender.injectApiFaults({ status: 429, retryAfter: '3600' })
    const error = await failure(client.listEndpoints())
    expect([error.status, error.code, error.attempts]).toEqual([429, 'rate_limited', 1])
  })

  it('times out an attempt after timeoutMs and retries a read, over real HTTP', async () => {
    const sender = createFaithfulSender({ apiKeys: { [KEY]: ['webhooks:manage'] } })
    const listener = await listenSender(sender)
    closers.push(() => listener.close())
    // An attempt gets 1 s (room for a real HTTP round trip on a loaded machine); the held one waits 5 s.
    const client = createWebhooksClient({ apiKey: KEY, baseUrl: listener.baseUrl, timeoutMs: 1_000, maxRetries: 0 })
    sender.injectApiFaults({ delayMs: 5_000 })
    const error = await failure(client.listEndpoints())
    expect([error.status, error.code, error.requestId]).toEqual([0, 'timeout', undefined])
    expect(error.message).toContain('within 1000 ms')
    const patient = createWebhooksClient({ apiKey: KEY, baseUrl: listener.baseUrl, timeoutMs: 1_000, maxRetries: 1, backoffBaseMs: 1 })
    sender.injectApiFaults({ delayMs: 5_000 })
    expect((await patient.listEndpoints()).endpoints).toEqual([])
  })

  it('does not retry a create whose answer was lost (the endpoint may exist)', async () => {
    const { sender, client } = setup({ timeoutMs: 100, maxRetries: 3 })
    sender.injectApiFaults({ delayMs: 400 })
    const error = await failure(client.createEndpoint('https://hooks.example.com/x'))
    expect([error.code, error.attempts]).toEqual(['timeout', 1])
  })

  it('does not retry a create answered 5xx after the service created it: one endpoint, and advice to list before creating again', async () => {
    const sender = createFaithfulSender({ apiKeys: { [KEY]: ['webhooks:manage'] } })
    closers.push(() => sender.close())
    let posts = 0
    const client = createWebhooksClient({
      apiKey: KEY,
      baseUrl: 'https://api.sender.test/v1',
      backoffBaseMs: 1,
      maxRetries: 3,
      // The service creates the endpoint, then a proxy in front of it answers 502.
      fetch: async (input, init) => {
        const request = new Request(input, init)
        const answer = await sender.fetch(request)
        if (request.method !== 'POST') return answer
        posts++
        return Response.json({ error: { code: 'internal_error', message: 'bad gateway' } }, { status: 502 })
      },
    })
    const error = await failure(client.createEndpoint('https://hooks.example.com/x'))
    expect([error.status, error.attempts, posts]).toEqual([502, 1, 1])
    expect(error.message).toMatch(/may have created the endpoint anyway.*list the endpoints before creating again/)
    expect((await client.listEndpoints()).endpoints).toHaveLength(1)
  })

  it('retries a create on 429 and when the connection was refused (the request never left)', async () => {
    const { sender, client } = setup({ backoffBaseMs: 1, maxRetries: 3 })
    sender.injectApiFaults({ status: 429 })
    expect((await client.createEndpoint('https://hooks.example.com/a')).id).toMatch(/^[0-9a-f-]{36}$/)
    let refused = 1
    const flaky = createWebhooksClient({
      apiKey: KEY,
      baseUrl: 'https://api.sender.test/v1',
      backoffBaseMs: 1,
      fetch: async (input, init) => {
        if (refused-- > 0)
          throw new TypeError('fetch failed', { cause: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }) })
        return sender.fetch(new Request(input, init))
      },
    })
    expect((await flaky.createEndpoint('https://hooks.example.com/b')).id).toMatch(/^[0-9a-f-]{36}$/)
    expect((await client.listEndpoints()).endpoints.map((e) => e.url)).toEqual([
      'https://hooks.example.com/a',
      'https://hooks.example.com/b',
    ])
  })

  it('sends nothing when the signal is already aborted', async () => {
    const { client, sent } = setup()
    const signal = AbortSignal.abort(new Error('aborted before the call'))
    await expect(client.listEndpoints({ signal })).rejects.toThrow('aborted before the call')
    await expect(client.retryDelivery('e1', 'd1', { signal })).rejects.toThrow('aborted before the call')
    expect(sent).toEqual([])
  })

  it('stops waiting when the caller aborts', async () => {
    const { sender, client } = setup({ backoffBaseMs: 10_000, random: () => 0.99 })
    sender.injectApiFaults({ status: 503 })
    const controller = new AbortController()
    setTimeout(() => controller.abort(new Error('stopped by the test')), 50)
    await expect(client.listEndpoints({ signal: controller.signal })).rejects.toThrow('stopped by the test')
  })
})

describe('webhooks client: the key never appears in an error', () => {
  it('in no message, stack, cause, toString, JSON or inspect output, for every kind of failure', async () => {
    const errors: EmailApiError[] = []
    const { sender, client } = setup({ maxRetries: 1, backoffBaseMs: 1, timeoutMs: 100 })
    errors.push(await failure(client.enableEndpoint('missing')))
    errors.push(await failure(client.createEndpoint('http://10.0.0.1/x')))
    sender.injectApiFaults({ status: 429 }, { status: 429 })
    errors.push(await failure(client.listEndpoints()))
    sender.injectApiFaults({ status: 503 }, { status: 503 })
    errors.push(await failure(client.listEndpoints()))
    sender.injectApiFaults({ delayMs: 300 }, { delayMs: 300 })
    errors.push(await failure(client.listEndpoints()))
    errors.push(await failure(setup({ apiKey: READ_ONLY_KEY }).client.listEndpoints()))
    // A service that echoes the key back, and a network failure whose message quotes it.
    const echo = createWebhooksClient({
      apiKey: KEY,
      baseUrl: 'https://api.sender.test/v1',
      fetch: async () => Response.json({ error: { code: 'internal_error', message: `bad key ${KEY}`, requestId: 'r1' } }, { status: 400 }),
    })
    errors.push(await failure(echo.listEndpoints()))
    const quoting = createWebhooksClient({
      apiKey: KEY,
      baseUrl: 'https://api.sender.test/v1',
      maxRetries: 0,
      fetch: async (_input, init) => {
        throw new TypeError('fetch failed', { cause: new Error(`header ${new Headers(init?.headers).get('authorization')}`) })
      },
    })
    errors.push(await failure(quoting.listEndpoints()))
    const closed = await listenSender(sender)
    await closed.close()
    errors.push(await failure(createWebhooksClient({ apiKey: KEY, baseUrl: closed.baseUrl, maxRetries: 0 }).listEndpoints()))
    expect(errors.map((e) => e.code)).toEqual([
      'not_found',
      'invalid_webhook',
      'rate_limited',
      'internal_error',
      'timeout',
      'missing_scope',
      'internal_error',
      'network_error',
      'network_error',
    ])
    for (const error of errors) for (const text of renderings(error)) expect(text).not.toContain(KEY.slice(8))
    // Nor does the client itself show it when logged.
    expect(inspect(client, { depth: null, showHidden: true }) + JSON.stringify(client)).not.toContain(KEY.slice(8))
    const networkCause = (errors[7] as EmailApiError).cause as Error
    expect(String(networkCause.cause)).toContain('[redacted API key]')
  })
})
