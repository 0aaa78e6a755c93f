/**
 * What a page gets: the request, the clock, the CSRF token for its forms, the console's settings,
 * links under the console's path, and `read`, which bounds every store read by `storeTimeoutMs`
 * and turns a failure into a problem the page shows (a store that is down never crashes a page).
 */

import type { InboxQueue } from '../store/inbox.js'
import type { DedupStore } from '../store/types.js'
import { withTimeout } from '../timers.js'
import type { Html } from './html.js'
import type { ConsoleReceiver } from './options.js'
import type { DeliverySampler } from './sampler.js'
import type { ConsoleSource } from './source.js'

/** The console's settings, shared by every request. */
export interface ConsoleSettings {
  actions: boolean
  namespace: string
  retentionMs: number
  basePath: string
  storeTimeoutMs: number
  source: ConsoleSource
  store: DedupStore
  inbox: InboxQueue | undefined
  receiver: ConsoleReceiver | undefined
  sampler: DeliverySampler | undefined
}

/** A store read that answered, or why it did not. */
export type Read<T> = { ok: true; value: T } | { ok: false; problem: string }

/** Where a page belongs in the navigation. */
export type Section = 'overview' | 'find' | 'dead' | 'none'

/** A page to render. */
export interface Page {
  status?: number
  title: string
  section: Section
  body: Html
}

/** What a route answers: a page, or a redirect after an action (303, so a reload never repeats it). */
export type PageResult = Page | { redirect: string }

/** The request as a page sees it. */
export interface PageContext {
  readonly request: Request
  readonly url: URL
  readonly now: number
  /** The CSRF token every form carries. */
  readonly csrf: string
  readonly settings: ConsoleSettings
  /** Runs a store read within `storeTimeoutMs`. */
  read<T>(step: () => Promise<T>): Promise<Read<T>>
  /** A link to `path` (under the console) with the given query parameters (empty ones left out). */
  href(path: string, query?: Record<string, string | number | undefined>): string
}

/** The message a page shows for a failed read: the error's code and message, never its cause or stack. */
export function problemOf(error: unknown): string {
  if (!(error instanceof Error)) return String(error).slice(0, 300)
  const code = (error as { code?: unknown }).code
  const message = error.message.length > 500 ? `${error.message.slice(0, 500)}…` : error.message
  return `${typeof code === 'string' ? `${code}: ` : `${error.name}: `}${message}`
}

/** Resolves with the read, or rejects once `ms` passed. */
export async function within<T>(step: () => Promise<T>, ms: number): Promise<T> {
  // Boxed: a read that resolves with undefined is not a timeout.
  const read = await withTimeout(new Promise<{ value: T }>((resolve) => resolve(step().then((value) => ({ value })))), ms)
  if (read === undefined) throw new Error(`the store did not answer within ${ms} ms (storeTimeoutMs)`)
  return read.value
}

/** Builds the context of one request. */
export function pageContext(request: Request, url: URL, now: number, csrf: string, settings: ConsoleSettings): PageContext {
  return {
    request,
    url,
    now,
    csrf,
    settings,
    async read<T>(step: () => Promise<T>): Promise<Read<T>> {
      try {
        return { ok: true, value: await within(step, settings.storeTimeoutMs) }
      } catch (error) {
        return { ok: false, problem: problemOf(error) }
      }
    },
    href(path, query = {}) {
      const params = new URLSearchParams()
      for (const [name, value] of Object.entries(query)) if (value !== undefined && value !== '') params.set(name, String(value))
      const search = params.toString()
      return `${settings.basePath}${path}${search ? `?${search}` : ''}`
    },
  }
}
