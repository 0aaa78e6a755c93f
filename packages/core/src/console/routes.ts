/**
 * The console's routes, by method and path under its base: pages are GETs (reads only), actions
 * are POSTs (`action: true`: refused unless `actions` is on). Ids in paths are percent-decoded;
 * one that does not decode is a 400, never an exception.
 */
import type { PageContext, PageResult } from './context.js'
import { payloadPage, purgeDead, retryMatching, retrySelected } from './pages/actions.js'
import { deadPage, planPage } from './pages/dead.js'
import { emailPage } from './pages/email.js'
import { eventPage } from './pages/event.js'
import { findPage } from './pages/find.js'
import { overviewPage } from './pages/overview.js'
import { MAX_FIELD } from './query.js'

/** A GET page. */
type Read = (ctx: PageContext, param: string) => Promise<PageResult>
/** A POST. */
type Write = (ctx: PageContext, form: URLSearchParams) => Promise<PageResult>

/** What a path resolves to. */
export type Route =
  | { method: 'GET'; run: Read; param: string }
  | { method: 'POST'; run: Write; action: boolean }
  | { method: 'ASSET' }
  | { notFound: true }
  | { badParam: true }

const GETS: Record<string, Read> = {
  '/': (ctx) => overviewPage(ctx),
  '/find': (ctx) => findPage(ctx),
  '/dead': (ctx) => deadPage(ctx),
  '/dead/plan': (ctx) => planPage(ctx),
}
const POSTS: Record<string, { run: Write; action: boolean }> = {
  '/dead/retry': { run: retrySelected, action: true },
  '/dead/retry-matching': { run: retryMatching, action: true },
  '/dead/purge': { run: purgeDead, action: true },
  '/payload': { run: payloadPage, action: false },
}
const WITH_ID: Record<string, Read> = {
  '/events/': (ctx, id) => eventPage(ctx, id),
  '/emails/': (ctx, id) => emailPage(ctx, id),
}

/** The route of `path` (under the console's base, `/` for its root). */
export function route(path: string): Route {
  if (path === '/assets/console.css') return { method: 'ASSET' }
  const get = GETS[path]
  if (get) return { method: 'GET', run: get, param: '' }
  const post = POSTS[path]
  if (post) return { method: 'POST', ...post }
  for (const [prefix, run] of Object.entries(WITH_ID)) {
    if (!path.startsWith(prefix)) continue
    const raw = path.slice(prefix.length)
    if (raw.length === 0 || raw.includes('/')) return { notFound: true }
    try {
      const param = decodeURIComponent(raw)
      if (param.trim().length === 0 || param.length > MAX_FIELD) return { badParam: true }
      return { method: 'GET', run, param }
    } catch {
      return { badParam: true }
    }
  }
  return { notFound: true }
}
