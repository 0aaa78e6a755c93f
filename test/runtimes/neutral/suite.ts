/**
 * The runtime-neutral behaviour subset: what must hold on Bun, Deno and every other runtime
 * that speaks `Request`/`Response`. It covers these answers (200 handled, duplicate, for unknown
 * and non-email types and for a signed non-envelope acknowledged as ignored; 401, 405 from the
 * fetch handler, 409, 413, 500, 503) for core's fetch handler and the Hono adapter, each with the
 * memory store and with a custom store. It needs no test runner and no Node API:
 * `run-neutral.ts` runs it and prints the results as JSON, and test/runtimes/neutral.test.ts
 * checks them.
 */
import {
  type Claim,
  type ClaimOptions,
  type ClaimResult,
  type CompleteOptions,
  type DedupStore,
  EMAIL_EVENT_TYPES,
  emailWebhook as fetchWebhook,
  MemoryDedupStore,
  type WebhookEvent,
} from '@email-webhooks/core'
import { createFixtureDeliveries, createSignedDelivery, TEST_SECRET } from '@email-webhooks/core/testing'
import { emailWebhook as honoWebhook } from '@email-webhooks/hono'
import { Hono } from 'hono'

/** Starts an HTTP server of the runtime on 127.0.0.1 and a free port. */
export type Serve = (fetch: (request: Request) => Response | Promise<Response>) => Promise<{ url: string; close(): Promise<void> }>

export interface Delivery {
  headers: Record<string, string>
  body: string | Uint8Array<ArrayBuffer>
  method?: string
}

export interface Answer {
  status: number
  headers: Headers
  text: string
  json: { ok?: boolean; duplicate?: boolean; ignored?: string; error?: { code: string; message: string } }
}

interface Target {
  send(delivery: Delivery): Promise<Answer>
  close(): Promise<void>
}

// biome-ignore lint/suspicious/noExplicitAny: each adapter adds its own context; the suite only uses core's fields.
type AnyHandlers = Record<string, (event: any, ctx: any) => unknown>
// biome-ignore lint/suspicious/noExplicitAny: as above.
type AnyOptions = Record<string, any>

interface TargetKind {
  name: string
  /** Only core's fetch handler answers other methods itself (405); a Hono app routes them. */
  answersMethods: boolean
  create(secret: string | string[], handlers: AnyHandlers, options: AnyOptions): Promise<Target>
}

export interface CaseResult {
  name: string
  ok: boolean
  error?: string
  ms: number
}

/**
 * A store written the way a user writes one for their own database: here over an async
 * key-value map with a per-key version (compare-and-set), the shape of Deno KV, Workers KV
 * with a Durable Object, DynamoDB or Redis. Checked with the conformance suite as well.
 */
export class CompareAndSetStore implements DedupStore {
  readonly #rows = new Map<
    string,
    { version: number; value: { state: 'pending' | 'done'; token: string; attempt: number; expiresAt: number } }
  >()

  async #get(key: string) {
    await Promise.resolve()
    return this.#rows.get(key)
  }

  async #set(
    key: string,
    expectedVersion: number,
    value: { state: 'pending' | 'done'; token: string; attempt: number; expiresAt: number },
  ) {
    await Promise.resolve()
    const current = this.#rows.get(key)?.version ?? 0
    if (current !== expectedVersion) return false
    this.#rows.set(key, { version: current + 1, value })
    return true
  }

  async claim(key: string, { leaseMs }: ClaimOptions): Promise<ClaimResult> {
    for (;;) {
      const row = await this.#get(key)
      const now = Date.now()
      if (row && row.value.expiresAt > now) {
        if (row.value.state === 'done') return { status: 'duplicate' }
        if (row.value.token !== '') return { status: 'in_flight', retryAfterMs: row.value.expiresAt - now }
      }
      const attempt = row && row.value.state === 'pending' ? row.value.attempt + 1 : 1
      const token = crypto.randomUUID()
      if (await this.#set(key, row?.version ?? 0, { state: 'pending', token, attempt, expiresAt: now + leaseMs })) {
        return { status: 'acquired', claim: { key, token, attempt } }
      }
    }
  }

  async complete(claim: Claim, { retentionMs }: CompleteOptions): Promise<boolean> {
    const row = await this.#get(claim.key)
    if (row?.value.state !== 'pending' || row.value.token !== claim.token || row.value.expiresAt <= Date.now()) return false
    return this.#set(claim.key, row.version, { state: 'done', token: '', attempt: row.value.attempt, expiresAt: Date.now() + retentionMs })
  }

  async release(claim: Claim): Promise<boolean> {
    const row = await this.#get(claim.key)
    if (row?.value.state !== 'pending' || row.value.token !== claim.token) return false
    return this.#set(claim.key, row.version, { state: 'pending', token: '', attempt: row.value.attempt, expiresAt: 0 })
  }
}

/** A store whose database is down: every call fails. */
const unreachableStore: DedupStore = {
  claim: () => Promise.reject(new Error('connection refused')),
  complete: () => Promise.reject(new Error('connection refused')),
  release: () => Promise.reject(new Error('connection refused')),
}

const OTHER_SECRET = 'whsec_rotated_secret_for_runtime_suite'

async function answerOf(response: Response): Promise<Answer> {
  const text = await response.text()
  let json: Answer['json'] = {}
  try {
    json = JSON.parse(text)
  } catch {}
  return { status: response.status, headers: response.headers, text, json }
}

function requestOf(url: string, delivery: Delivery): Request {
  const method = delivery.method ?? 'POST'
  return new Request(url, { method, headers: delivery.headers, body: method === 'GET' ? null : delivery.body })
}

function fetchHandlerOver(serve: Serve, runtime: string): TargetKind {
  return {
    name: `core's fetch handler over ${runtime}'s HTTP server`,
    answersMethods: true,
    async create(secret, handlers, options) {
      const server = await serve(fetchWebhook(secret, handlers, options))
      return { send: async (d) => answerOf(await fetch(requestOf(`${server.url}/hooks`, d))), close: () => server.close() }
    },
  }
}

function honoApp(secret: string | string[], handlers: AnyHandlers, options: AnyOptions): Hono {
  const app = new Hono()
  app.post('/hooks', honoWebhook(secret, handlers, options))
  return app
}

const honoRequest: TargetKind = {
  name: 'Hono (app.request)',
  answersMethods: false,
  async create(secret, handlers, options) {
    const app = honoApp(secret, handlers, options)
    return { send: async (d) => answerOf(await app.request(requestOf('http://localhost/hooks', d))), close: async () => {} }
  },
}

function honoOver(serve: Serve, runtime: string): TargetKind {
  return {
    name: `Hono over ${runtime}'s HTTP server`,
    answersMethods: false,
    async create(secret, handlers, options) {
      const server = await serve(honoApp(secret, handlers, options).fetch)
      return { send: async (d) => answerOf(await fetch(requestOf(`${server.url}/hooks`, d))), close: () => server.close() }
    },
  }
}

const STORES: [string, () => DedupStore][] = [
  ['memory store', () => new MemoryDedupStore()],
  ['custom store', () => new CompareAndSetStore()],
]

type Start = (handlers?: AnyHandlers, options?: AnyOptions, secret?: string | string[]) => Promise<(d: Delivery) => Promise<Answer>>
type Check = (start: Start, kind: TargetKind) => Promise<void>

class CheckFailure extends Error {
  override readonly name = 'CheckFailure'
}

function same(actual: unknown, expected: unknown, what: string): void {
  const a = JSON.stringify(actual)
  const e = JSON.stringify(expected)
  if (a !== e) throw new CheckFailure(`${what}: expected ${e}, got ${a}`)
}

function check(condition: unknown, what: string): asserts condition {
  if (!condition) throw new CheckFailure(what)
}

const CHECKS: [string, Check][] = [
  [
    'answers 200 and hands each of the 11 email event types to its typed handler once',
    async (start) => {
      const seen: string[] = []
      const send = await start(Object.fromEntries(EMAIL_EVENT_TYPES.map((type) => [type, (e: WebhookEvent) => void seen.push(e.type)])))
      for (const type of EMAIL_EVENT_TYPES) {
        const answer = await send(await createSignedDelivery({ type }))
        same([type, answer.status, answer.json], [type, 200, { ok: true }], 'answer')
      }
      same(seen, [...EMAIL_EVENT_TYPES], 'handled types')
    },
  ],
  [
    'answers a duplicate 200 {duplicate: true} without running the handler again',
    async (start) => {
      let runs = 0
      const send = await start({ 'email.bounced': () => void runs++ })
      const first = await createSignedDelivery({ type: 'email.bounced' })
      same((await send(first)).json, { ok: true }, 'first answer')
      const retry = await send(await createSignedDelivery({ event: first.event }))
      same([retry.status, retry.json, runs], [200, { ok: true, duplicate: true }, 1], 'retry answer and runs')
    },
  ],
  [
    'answers 200 to unknown and non-email types after onUnknown runs',
    async (start) => {
      const unknown: string[] = []
      const send = await start({}, { onUnknown: (e: WebhookEvent) => void unknown.push(e.type) })
      for (const type of ['email.opened_in_the_future', 'organization.updated']) {
        same([type, (await send(await createSignedDelivery({ type }))).status], [type, 200], 'answer')
      }
      same(unknown, ['email.opened_in_the_future', 'organization.updated'], 'onUnknown calls')
    },
  ],
  [
    'answers 401 to every rejection fixture and 200 ignored to every signed non-envelope, with its code, running no handler',
    async (start) => {
      let runs = 0
      const now = Math.floor(Date.now() / 1000)
      const send = await start(Object.fromEntries(EMAIL_EVENT_TYPES.map((type) => [type, () => void runs++])), { now: () => now * 1000 })
      const fixtures = (await createFixtureDeliveries({ now })).filter((f) => f.expected.code !== undefined)
      const statuses = new Set(fixtures.map((f) => f.expected.status))
      same([statuses.has(200), statuses.has(401)], [true, true], 'fixtures cover 401 refusals and 200 ignored')
      for (const fixture of fixtures) {
        const answer = await send(fixture)
        same(
          [fixture.name, answer.status, answer.json.error?.code ?? answer.json.ignored],
          [fixture.name, fixture.expected.status, fixture.expected.code],
          'status and code',
        )
      }
      same(runs, 0, 'handler runs')
    },
  ],
  [
    'answers 405 with Allow: POST to a GET, or leaves the method to the app router',
    async (start, kind) => {
      const send = await start()
      const delivery = await createSignedDelivery()
      const answer = await send({ ...delivery, method: 'GET' })
      if (kind.answersMethods) {
        same([answer.status, answer.json.error?.code, answer.headers.get('allow')], [405, 'method_not_allowed', 'POST'], 'answer')
      } else {
        same(answer.status, 404, 'Hono answers a GET to a POST route itself')
      }
    },
  ],
  [
    'answers 409 with Retry-After while another request handles the same event, then 200',
    async (start) => {
      let started!: () => void
      const running = new Promise<void>((resolve) => {
        started = resolve
      })
      let finish!: () => void
      const held = new Promise<void>((resolve) => {
        finish = resolve
      })
      let runs = 0
      const send = await start({
        'email.complained': async () => {
          runs++
          started()
          await held
        },
      })
      const delivery = await createSignedDelivery({ type: 'email.complained' })
      const first = send(delivery)
      await running
      const second = await send(delivery)
      same([second.status, second.json.error?.code], [409, 'in_flight'], 'concurrent copy')
      check(Number(second.headers.get('retry-after')) >= 1, `Retry-After ${second.headers.get('retry-after')} is at least 1`)
      finish()
      same([(await first).status, runs], [200, 1], 'first copy and runs')
    },
  ],
  [
    'answers 413 to a body over 1 MiB',
    async (start) => {
      const send = await start()
      const event = {
        id: crypto.randomUUID(),
        type: 'email.queued',
        created_at: new Date().toISOString(),
        data: { id: 'x', pad: 'a'.repeat(1 << 20) },
      }
      const answer = await send(await createSignedDelivery({ event }))
      same([answer.status, answer.json.error?.code], [413, 'body_too_large'], 'answer')
    },
  ],
  [
    'answers 500 when a handler throws, and runs it again on the retry',
    async (start) => {
      const attempts: number[] = []
      const send = await start({
        'email.rejected': (_e: WebhookEvent, ctx: { attempt: number }) => {
          attempts.push(ctx.attempt)
          if (attempts.length === 1) throw new Error('database down')
        },
      })
      const delivery = await createSignedDelivery({ type: 'email.rejected' })
      const failed = await send(delivery)
      same([failed.status, failed.json.error?.code], [500, 'handler_failed'], 'failed answer')
      check(!failed.text.includes('database down'), 'the answer does not quote the handler error')
      same((await send(await createSignedDelivery({ event: delivery.event }))).status, 200, 'retry')
      same(attempts, [1, 2], 'attempts')
    },
  ],
  [
    'answers 503 store_unavailable when the store fails, running no handler',
    async (start) => {
      let runs = 0
      const send = await start({ 'email.queued': () => void runs++ }, { store: unreachableStore })
      const answer = await send(await createSignedDelivery({ type: 'email.queued' }))
      same([answer.status, answer.json.error?.code, runs], [503, 'store_unavailable', 0], 'answer and runs')
    },
  ],
  [
    'accepts any of several secrets and refuses a third with 401',
    async (start) => {
      const send = await start({}, {}, [TEST_SECRET, OTHER_SECRET])
      same((await send(await createSignedDelivery({ secret: OTHER_SECRET }))).status, 200, 'second secret')
      const third = await send(await createSignedDelivery({ secret: 'whsec_some_third_secret' }))
      same([third.status, third.json.error?.code], [401, 'signature_mismatch'], 'third secret')
    },
  ],
]

/** The names of every case, in order, for a given runtime name. */
export function caseNames(runtime: string): string[] {
  return targetKinds(async () => ({ url: '', close: async () => {} }), runtime).flatMap((kind) =>
    STORES.flatMap(([store]) => CHECKS.map(([check]) => `${kind.name}, ${store}: ${check}`)),
  )
}

function targetKinds(serve: Serve, runtime: string): TargetKind[] {
  return [fetchHandlerOver(serve, runtime), honoRequest, honoOver(serve, runtime)]
}

/**
 * Runs every check against every target and store, one after the other.
 * Every answer is also checked never to contain the secret, the signature or the body.
 */
export async function runNeutralSuite(serve: Serve, runtime: string): Promise<CaseResult[]> {
  const results: CaseResult[] = []
  for (const kind of targetKinds(serve, runtime)) {
    for (const [storeName, createStore] of STORES) {
      for (const [checkName, body] of CHECKS) {
        const name = `${kind.name}, ${storeName}: ${checkName}`
        const started = Date.now()
        const targets: Target[] = []
        try {
          await body(async (handlers = {}, options = {}, secret = TEST_SECRET) => {
            const target = await kind.create(secret, handlers, { store: createStore(), ...options })
            targets.push(target)
            return async (delivery) => {
              const answer = await target.send(delivery)
              leaksNothing(delivery, answer)
              return answer
            }
          }, kind)
          results.push({ name, ok: true, ms: Date.now() - started })
        } catch (error) {
          results.push({
            name,
            ok: false,
            error: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
            ms: Date.now() - started,
          })
        } finally {
          for (const target of targets) await target.close()
        }
      }
    }
  }
  return results
}

function leaksNothing(delivery: Delivery, answer: Answer): void {
  const body = typeof delivery.body === 'string' ? delivery.body : new TextDecoder().decode(delivery.body)
  check(!answer.text.includes(TEST_SECRET) && !answer.text.includes(OTHER_SECRET), 'an answer contains a secret')
  const signature = delivery.headers['webhook-signature']
  if (signature && signature.length > 8) check(!answer.text.includes(signature), 'an answer contains the signature')
  if (body.length > 20) check(!answer.text.includes(body), 'an answer contains the body')
}
