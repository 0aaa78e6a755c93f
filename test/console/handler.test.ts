/**
 * The console's fetch handler without a browser: construction errors, authentication, the
 * protective headers, actions behind the same-origin check and the CSRF token, read-only by
 * default, hostile input escaped on every page, payloads only when asked, keyset paging, a store
 * without an inbox, a store that is down or hangs, unknown ids. SQLite (the store's own console
 * reads) and the memory store (the contract-only reads).
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type DedupStore, MemoryDedupStore } from '@email-webhooks/core'
import { CONSOLE_CSP, emailWebhookConsole, WebhookConsoleError } from '@email-webhooks/core/console'
import { SqliteDedupStore } from '@email-webhooks/core/sqlite'
import { afterAll, beforeEach, describe, expect, it } from 'vitest'
import { scaled } from '../support/time.js'
import { AUTH, CREDENTIALS, deadEntries, formToken, get, inboxOf, item, ORIGIN, post, textOf } from './helpers.js'

const dir = mkdtempSync(join(tmpdir(), 'console-handler-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
let n = 0
const sqlite = () => new SqliteDedupStore({ path: join(dir, `s${++n}.db`) })

function codeOf(make: () => unknown): string | undefined {
  try {
    make()
  } catch (error) {
    expect(error).toBeInstanceOf(WebhookConsoleError)
    return (error as WebhookConsoleError).code
  }
  return undefined
}

describe('emailWebhookConsole: checks at construction', () => {
  const store = new MemoryDedupStore()
  it('refuses to be built without auth, saying how to give it', () => {
    // @ts-expect-error auth is required
    expect(() => emailWebhookConsole({ store })).toThrow(/needs auth: .*auth: \{ username, password \}.*auth: \(request\) => boolean/)
    // @ts-expect-error auth is required
    expect(codeOf(() => emailWebhookConsole({ store }))).toBe('auth_required')
  })
  it('refuses a short password, a user name with ":" and a store that is missing', () => {
    expect(codeOf(() => emailWebhookConsole({ store, auth: { username: 'ops', password: 'short' } }))).toBe('auth_invalid')
    expect(codeOf(() => emailWebhookConsole({ store, auth: { username: 'a:b', password: 'long enough password' } }))).toBe('auth_invalid')
    expect(codeOf(() => emailWebhookConsole({ auth: CREDENTIALS }))).toBe('store_required')
  })
  it('refuses a bad basePath or retentionMs', () => {
    expect(codeOf(() => emailWebhookConsole({ store, auth: CREDENTIALS, basePath: 'console/' }))).toBe('invalid_options')
    expect(codeOf(() => emailWebhookConsole({ store, auth: CREDENTIALS, retentionMs: 1.5 }))).toBe('invalid_options')
  })
  it('takes the store of a receiver', async () => {
    const handler = emailWebhookConsole({ auth: CREDENTIALS, receiver: { stats: () => ({}) as never, store: () => store } })
    expect((await get(handler, '/find')).status).toBe(200)
  })
})

describe('authentication', () => {
  const handler = emailWebhookConsole({ store: new MemoryDedupStore(), auth: CREDENTIALS })
  it.for([
    ['no header', {}],
    ['a wrong password', { authorization: `Basic ${btoa('ops:not-the-password')}` }],
    ['a malformed header', { authorization: 'Basic %%%' }],
    ['a bearer token', { authorization: 'Bearer x' }],
  ] as const)('answers 401 with a basic-auth challenge and nothing of the store to %s', async ([, headers]) => {
    for (const path of ['/', '/find?q=x', '/dead', '/assets/console.css', '/events/x']) {
      const response = await handler(new Request(`${ORIGIN}${path}`, { headers }))
      expect(response.status).toBe(401)
      expect(response.headers.get('www-authenticate')).toBe('Basic realm="email-webhooks console", charset="UTF-8"')
      const text = await response.text()
      expect(text).not.toContain('Overview')
      expect(text).not.toContain('csrf')
    }
  })
  it('lets in exactly what an auth function allows, with the framework context it was given', async () => {
    const seen: unknown[] = []
    const guarded = emailWebhookConsole<{ user: string | undefined }>({
      store: new MemoryDedupStore(),
      auth: (request, context) => {
        seen.push(context.user)
        if (request.headers.get('x-throw')) throw new Error('broken check')
        return context.user === 'admin'
      },
    })
    const ask = (user: string | undefined, headers: Record<string, string> = {}) =>
      guarded.handle(new Request(`${ORIGIN}/`, { headers }), { context: { user } }).then((r) => r.status)
    expect(await ask('admin')).toBe(200)
    expect(await ask('guest')).toBe(401)
    expect(await ask('admin', { 'x-throw': '1' })).toBe(401)
    expect(seen).toEqual(['admin', 'guest', 'admin'])
  })
})

describe('every answer', () => {
  it('carries a strict CSP and no-store, and no page has a script or an outside asset', async () => {
    const store = sqlite()
    const handler = emailWebhookConsole({ store, auth: CREDENTIALS, actions: true })
    await deadEntries(inboxOf(store), [item('e1', 'email.bounced', 'm1')], 'boom')
    for (const path of ['/', '/find?q=e1', '/find?state=dead', '/dead', '/dead/plan?do=retry', '/events/e1', '/emails/m1', '/nope']) {
      const { response, text } = await get(handler, path)
      expect(response.headers.get('content-security-policy')).toBe(CONSOLE_CSP)
      expect(CONSOLE_CSP).toContain("default-src 'none'")
      expect(response.headers.get('cache-control')).toBe('no-store')
      expect(response.headers.get('x-content-type-options')).toBe('nosniff')
      expect(response.headers.get('x-frame-options')).toBe('DENY')
      expect(text).not.toMatch(/<script/i)
      expect(text).not.toMatch(/(src|href|action)="(https?:)?\/\//i)
    }
    await store.close()
  })
})

describe('actions', () => {
  let store: SqliteDedupStore
  beforeEach(async () => {
    store = sqlite()
    await deadEntries(
      inboxOf(store),
      [item('a1', 'email.bounced'), item('a2', 'email.bounced'), item('a3', 'email.complained')],
      'handler failed',
    )
  })
  const state = async (id: string) => (await inboxOf(store).get(`default:${id}`))?.state

  it('are off by default: no retry form, and a POST is refused even with a good token', async () => {
    const handler = emailWebhookConsole({ store, auth: CREDENTIALS })
    const page = await get(handler, '/dead')
    expect(page.text).not.toContain('Retry selected')
    expect(textOf(page.text)).toContain('Read-only: mount the console with actions: true')
    // The event page's payload form carries a token in read-only mode too.
    const event = await get(handler, '/events/a1')
    expect(event.text).not.toContain('Retry this dead letter')
    const answer = await post(handler, '/dead/retry', [['one', 'default:a1']], formToken(event.text, event.response))
    expect(answer.status).toBe(403)
    expect(textOf(answer.text)).toContain('This console is read-only')
    expect(await state('a1')).toBe('dead')
  })

  it('retry one dead letter from a page of the console, answering 303 to a page that says so', async () => {
    const handler = emailWebhookConsole({ store, auth: CREDENTIALS, actions: true })
    const page = await get(handler, '/dead')
    const answer = await post(handler, '/dead/retry', [['one', 'default:a1']], formToken(page.text, page.response))
    expect(answer.status).toBe(303)
    expect(answer.location).toBe('/dead?retried=1')
    expect([await state('a1'), await state('a2')]).toEqual(['pending', 'dead'])
    expect(textOf((await get(handler, answer.location as string)).text)).toContain('1 dead letter made pending again')
  })

  it.for([
    ['another origin', { origin: 'https://evil.example' }],
    ['an opaque origin', { origin: 'null' }],
    ['a cross-site fetch without Origin', { origin: '', 'sec-fetch-site': 'cross-site' }],
    ['a same-site (sibling) page', { 'sec-fetch-site': 'same-site' }],
    ['no Origin, Sec-Fetch-Site or Referer', { origin: '', 'sec-fetch-site': '' }],
  ] as const)('refuse a POST from %s, even with the right token', async ([, headers]) => {
    const handler = emailWebhookConsole({ store, auth: CREDENTIALS, actions: true })
    const page = await get(handler, '/dead')
    const clean = Object.fromEntries(Object.entries(headers).filter(([, v]) => v !== ''))
    const session = formToken(page.text, page.response)
    const stripped = async () => {
      const body = new URLSearchParams([
        ['csrf', session.token],
        ['one', 'default:a1'],
      ]).toString()
      const base: Record<string, string> = {
        authorization: AUTH,
        'content-type': 'application/x-www-form-urlencoded',
        cookie: session.cookie,
      }
      const response = await handler(new Request(`${ORIGIN}/dead/retry`, { method: 'POST', body, headers: { ...base, ...clean } }))
      return { status: response.status, text: await response.text() }
    }
    const answer = await stripped()
    expect(answer.status).toBe(403)
    expect(textOf(answer.text)).toContain('did not come from a page of the console')
    expect(await state('a1')).toBe('dead')
  })

  it('refuse a POST without the token, or with another one', async () => {
    const handler = emailWebhookConsole({ store, auth: CREDENTIALS, actions: true })
    const page = await get(handler, '/dead')
    const session = formToken(page.text, page.response)
    expect((await post(handler, '/dead/retry', [['one', 'default:a1']], { ...session, token: '' })).status).toBe(403)
    expect((await post(handler, '/dead/retry', [['one', 'default:a1']], { ...session, token: 'A'.repeat(43) })).status).toBe(403)
    expect((await post(handler, '/dead/retry', [['one', 'default:a1']], { ...session, cookie: '' })).status).toBe(403)
    expect(await state('a1')).toBe('dead')
  })

  it('plan, then retry every dead letter of a type; plan, then purge by age', async () => {
    const handler = emailWebhookConsole({ store, auth: CREDENTIALS, actions: true })
    const plan = await get(handler, '/dead/plan?do=retry&type=email.bounced')
    expect(textOf(plan.text)).toContain('2 dead letters of type email.bounced would be made pending again')
    expect(plan.text).toContain('Retry 2')
    const retried = await post(
      handler,
      '/dead/retry-matching',
      [
        ['type', 'email.bounced'],
        ['before', ''],
        ['planned', '2'],
      ],
      formToken(plan.text, plan.response),
    )
    expect(retried.location).toBe('/dead?retried=2&planned=2')
    expect([await state('a1'), await state('a2'), await state('a3')]).toEqual(['pending', 'pending', 'dead'])
    const purgePlan = await get(handler, `/dead/plan?do=purge&before=${new Date(Date.now() + 60_000).toISOString().slice(0, 16)}`)
    expect(textOf(purgePlan.text)).toContain('1 dead letter that died at or before')
    const purged = await post(
      handler,
      '/dead/purge',
      [
        ['before', String(Date.now() + 60_000)],
        ['planned', '1'],
      ],
      formToken(purgePlan.text, purgePlan.response),
    )
    expect(purged.location).toBe('/dead?purged=1&planned=1')
    expect(await inboxOf(store).get('default:a3')).toBeUndefined()
  })
})

describe('hostile input', () => {
  const evilId = '<img src=x onerror=alert(1)>'
  const evilType = '"><script>alert(2)</script>'
  const evilError = 'Error: <script>alert(3)</script> & "quotes"'
  const evilEmail = '</code><script>alert(4)</script>'

  it.for(['sqlite', 'memory'] as const)('is escaped on every page (%s): ids, types, error messages, query strings', async (kind) => {
    const store: DedupStore = kind === 'sqlite' ? sqlite() : new MemoryDedupStore()
    const handler = emailWebhookConsole({ store, auth: CREDENTIALS, actions: true })
    await deadEntries(inboxOf(store), [{ ...item(evilId, evilType, evilEmail) }], evilError)
    const paths = [
      '/',
      '/dead',
      `/dead?type=${encodeURIComponent(evilType)}`,
      `/dead/plan?do=retry&type=${encodeURIComponent(evilType)}`,
      `/find?state=dead`,
      `/find?q=${encodeURIComponent(evilId)}`,
      `/find?q=${encodeURIComponent(evilEmail)}`,
      `/events/${encodeURIComponent(evilId)}`,
      `/emails/${encodeURIComponent(evilEmail)}`,
      `/find?state=${encodeURIComponent('<marquee>')}`,
      `/find?before=${encodeURIComponent('<blink>')}`,
    ]
    for (const path of paths) {
      const { status, text } = await get(handler, path)
      expect(status, path).toBeLessThan(500)
      expect(text, path).not.toMatch(/<script|<img|<marquee|<blink/i)
    }
    const dead = textOf((await get(handler, '/dead')).text)
    expect(dead).toContain(evilId)
    expect(dead).toContain(evilType)
    expect(dead).toContain(evilError)
    expect(textOf((await get(handler, `/emails/${encodeURIComponent(evilEmail)}`)).text)).toContain(evilEmail)
    await store.close?.()
  })

  it('answers 400 to an id that does not decode, and 404 to a page that does not exist', async () => {
    const handler = emailWebhookConsole({ store: new MemoryDedupStore(), auth: CREDENTIALS })
    expect((await get(handler, '/events/%E0%A4%A')).status).toBe(400)
    expect((await get(handler, '/nope')).status).toBe(404)
    expect((await get(handler, '/events/a/b')).status).toBe(404)
    expect((await handler(new Request(`${ORIGIN}/dead`, { method: 'DELETE', headers: { authorization: AUTH } }))).status).toBe(405)
  })
})

describe('payloads', () => {
  it('are never on a page until asked for with a POST, and that page is not cached', async () => {
    const store = sqlite()
    const handler = emailWebhookConsole({ store, auth: CREDENTIALS })
    const payload = JSON.stringify({
      id: 'p1',
      type: 'email.bounced',
      created_at: new Date().toISOString(),
      data: { id: 'm9', recipient: 'alice@example.com' },
    })
    await deadEntries(inboxOf(store), [item('p1', 'email.bounced', 'm9', payload)], 'bounced handler failed')
    for (const path of ['/', '/dead', '/find?state=dead', '/find?q=p1', '/events/p1', '/emails/m9']) {
      const { text } = await get(handler, path)
      expect(text, path).not.toContain('alice@example.com')
    }
    const event = await get(handler, '/events/p1')
    expect(event.text).toContain('Show payload')
    const shown = await post(handler, '/payload', [['key', 'default:p1']], formToken(event.text, event.response))
    expect(shown.status).toBe(200)
    expect(textOf(shown.text)).toContain('"recipient": "alice@example.com"')
    await store.close()
  })
})

describe('paging', () => {
  it('goes through 120 dead letters 50 at a time, newest first, each once', async () => {
    const store = sqlite()
    const handler = emailWebhookConsole({ store, auth: CREDENTIALS })
    await deadEntries(
      inboxOf(store),
      Array.from({ length: 120 }, (_, i) => item(`k${String(i).padStart(3, '0')}`, 'email.bounced')),
      'x',
    )
    const seen: string[] = []
    let path: string | undefined = '/dead'
    let pages = 0
    while (path !== undefined && pages < 10) {
      const text: string = (await get(handler, path)).text
      seen.push(...[...text.matchAll(/name="key" value="[^"]*"|href="\/events\/(k\d{3})"/g)].flatMap((m) => (m[1] ? [m[1]] : [])))
      const next: string | undefined = /href="([^"]+)" rel="next"/.exec(text)?.[1]
      path = next?.replace(/&amp;/g, '&')
      pages++
    }
    expect(pages).toBe(3)
    expect(seen).toHaveLength(120)
    expect(new Set(seen).size).toBe(120)
    await store.close()
  })

  it('says that a store read through its contract offers no paging', async () => {
    const handler = emailWebhookConsole({ store: new MemoryDedupStore(), auth: CREDENTIALS })
    expect(textOf((await get(handler, '/dead')).text)).toContain("This store's inbox offers no paging")
  })
})

describe('a store without an inbox, a store that is down, unknown ids', () => {
  const bare = (hang = false): DedupStore => {
    const never = () => new Promise<never>(() => {})
    return {
      claim: never,
      complete: never,
      release: never,
      lookup: hang ? never : () => Promise.reject(new Error('connection refused')),
    }
  }

  it('says on each page that needs an inbox that the store has none', async () => {
    const handler = emailWebhookConsole({ store: bare(), auth: CREDENTIALS })
    for (const path of ['/', '/find', '/dead', '/dead/plan?do=retry', '/events/x']) {
      const { status, text } = await get(handler, path)
      expect(status, path).toBe(200)
      expect(textOf(text), path).toMatch(/has no inbox/)
    }
  })

  it('shows a failing or hanging store on the page, within storeTimeoutMs, and crashes nothing', async () => {
    const failing = emailWebhookConsole({ store: bare(), auth: CREDENTIALS })
    expect(textOf((await get(failing, '/events/x')).text)).toContain(
      'The store did not answer for the dedup record. Error: connection refused',
    )
    const hanging = emailWebhookConsole({ store: bare(true), auth: CREDENTIALS, storeTimeoutMs: 200 })
    const started = Date.now()
    const page = await get(hanging, '/find?q=x')
    expect(Date.now() - started).toBeLessThan(scaled(2_000))
    expect(textOf(page.text)).toContain('did not answer within 200 ms')
    const closed = sqlite()
    await deadEntries(inboxOf(closed), [item('c1', 'email.bounced')], 'x')
    const handler = emailWebhookConsole({ store: closed, auth: CREDENTIALS })
    await closed.close()
    for (const path of ['/', '/find?q=c1', '/dead', '/emails/m', '/events/c1', '/dead/plan']) {
      const { status, text } = await get(handler, path)
      expect(status, path).toBe(200)
      expect(textOf(text), path).toContain('closed: [@email-webhooks/core/sqlite] this SqliteDedupStore was closed')
    }
  })

  it('says what it knows of an unknown event and an unknown email', async () => {
    const store = sqlite()
    const handler = emailWebhookConsole({ store, auth: CREDENTIALS })
    expect(textOf((await get(handler, '/events/never-seen')).text)).toContain(
      'absent: never received here, or forgotten 7 d after it was handled',
    )
    expect(textOf((await get(handler, '/emails/never-seen')).text)).toContain('The store keeps nothing under this email id')
    expect(textOf((await get(handler, '/find?q=never-seen')).text)).toContain('the store keeps nothing under this email id')
    await store.close()
  })
})
