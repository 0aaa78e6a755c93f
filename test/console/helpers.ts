/**
 * Helpers of the console tests: requests with and without credentials, a page's CSRF token and
 * cookie, forms posted as a browser of the console's own page would, and inbox entries made dead
 * through the store's own inbox (enqueue, take, fail with no retry), as a worker leaves them.
 */
import type { DedupStore, InboxItem, InboxQueue } from '@email-webhooks/core'
import { expect } from 'vitest'

export const USER = 'ops'
export const PASSWORD = 'console-test-password-1'
export const AUTH = `Basic ${btoa(`${USER}:${PASSWORD}`)}`
export const CREDENTIALS = { username: USER, password: PASSWORD }
export const ORIGIN = 'http://console.test'

type Handler = (request: Request) => Promise<Response>

/** A GET as a signed-in browser sends it. */
export async function get(
  handler: Handler,
  path: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; text: string; response: Response }> {
  const response = await handler(new Request(`${ORIGIN}${path}`, { headers: { authorization: AUTH, ...headers } }))
  return { status: response.status, text: await response.text(), response }
}

/** The form token a page carries and the cookie it set (or was given). */
export function formToken(text: string, response: Response, cookie?: string): { token: string; cookie: string } {
  const token = /name="csrf" value="([^"]+)"/.exec(text)?.[1]
  expect(token, 'the page carries a form token').toBeTruthy()
  const set = response.headers.get('set-cookie')
  const jar = set ? (set.split(';')[0] as string) : (cookie ?? '')
  expect(jar).toMatch(/^ewc_csrf=/)
  return { token: token as string, cookie: jar }
}

/** A form POST as the console's own page sends it (same origin, its token and cookie), unless overridden. */
export async function post(
  handler: Handler,
  path: string,
  fields: Array<[string, string]>,
  session: { token: string; cookie: string },
  headers: Record<string, string> = {},
): Promise<{ status: number; text: string; location: string | null }> {
  const body = new URLSearchParams([['csrf', session.token], ...fields]).toString()
  const response = await handler(
    new Request(`${ORIGIN}${path}`, {
      method: 'POST',
      body,
      headers: {
        authorization: AUTH,
        'content-type': 'application/x-www-form-urlencoded',
        cookie: session.cookie,
        origin: ORIGIN,
        'sec-fetch-site': 'same-origin',
        ...headers,
      },
    }),
  )
  return { status: response.status, text: await response.text(), location: response.headers.get('location') }
}

/** Queues `items` and leaves each dead with `error` (taken once, failed without a retry). */
export async function deadEntries(inbox: InboxQueue, items: InboxItem[], error: string): Promise<void> {
  for (const item of items) expect(await inbox.enqueue(item, { retentionMs: 3_600_000 })).toBe('queued')
  for (let i = 0; i < items.length; i++) {
    const lease = await inbox.take({ leaseMs: 60_000, ordered: false })
    if (!lease) throw new Error('no entry to take')
    expect(await inbox.fail(lease, { error, retryInMs: null })).toBe(true)
  }
}

/** An inbox item of `type` for event `id` (namespace `default`), with an email order key when `email` is given. */
export function item(id: string, type: string, email?: string, payload?: string): InboxItem {
  const created = Date.now()
  const body = payload ?? JSON.stringify({ id, type, created_at: new Date(created).toISOString(), data: { id: email ?? 'no-email' } })
  return {
    key: `default:${id}`,
    type,
    payload: body,
    timestamp: Math.floor(created / 1000),
    ...(email ? { orderKey: `default:email:${email}`, createdAtMs: created } : {}),
  }
}

/** The visible text of an HTML page (tags dropped, entities of the escape decoded once). */
export function textOf(html: string): string {
  return html
    .replace(/<\/?(p|div|td|th|tr|li|h1|h2|dt|dd|br|ul|table|header|footer|main|nav|figure|form|label|title|option|select)\b[^>]*>/gi, ' ')
    .replace(/<[^>]+>/g, '')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&amp;/g, '&')
    .replace(/\s+/g, ' ')
}

/** The store's inbox; every built-in store has one (a read-only SQLite store does not). */
export function inboxOf(store: DedupStore): InboxQueue {
  if (!store.inbox) throw new Error('this store has no inbox')
  return store.inbox
}
