/**
 * One request through the console: under its base path, authenticated, then a page (GET) or an
 * action (POST from the same origin with the form's CSRF token, and actions on), framed by the
 * layout with the protective headers. A failure of the console's own never leaves as a stack: a
 * 500 page says what failed.
 */
import { type AuthVerdict, createAuthenticator } from './auth.js'
import { type ConsoleSettings, type Page, type PageResult, pageContext, problemOf } from './context.js'
import { csrfTokenMatches, csrfTokenOf, fromSameOrigin } from './csrf.js'
import { html } from './html.js'
import { layout } from './layout.js'
import type { ConsoleAuth } from './options.js'
import { problem } from './pages/parts.js'
import { cssResponse, htmlResponse, plainPage, readForm, seeOther } from './respond.js'
import { route } from './routes.js'

/** Per-request settings an adapter passes: the path it is mounted on, and its framework's objects for `auth`. */
export interface ConsoleRequestInit<Ctx = undefined> {
  /** Where the console is mounted for this request (Express's `req.baseUrl`); default the `basePath` option. */
  basePath?: string
  /** Passed to an `auth` function as its second argument. */
  context?: Ctx
}

/** Builds the function that answers one request. */
export function createConsoleHandler<Ctx>(
  auth: ConsoleAuth<Ctx>,
  settings: ConsoleSettings,
): (request: Request, init?: ConsoleRequestInit<Ctx>) => Promise<Response> {
  const authenticate = createAuthenticator(auth)
  return async function handleConsoleRequest(request, init = {}) {
    const startedAt = performance.now()
    const url = new URL(request.url)
    const basePath = init.basePath ?? settings.basePath
    if (url.pathname !== basePath && !url.pathname.startsWith(`${basePath}/`)) {
      return plainPage(404, 'Not found', 'This path is not part of the console.')
    }
    if (basePath !== '' && url.pathname === basePath) return seeOther(`${basePath}/${url.search}`)
    const verdict: AuthVerdict = await authenticate(request, init.context as Ctx)
    if (!verdict.ok) {
      const extra: Record<string, string> = verdict.challenge ? { 'www-authenticate': verdict.challenge } : {}
      return plainPage(401, 'Sign in', 'The webhooks console needs you to sign in.', extra)
    }
    const path = url.pathname.slice(basePath.length) || '/'
    const found = route(path)
    if ('method' in found && found.method === 'ASSET')
      return request.method === 'GET' || request.method === 'HEAD' ? cssResponse() : notAllowed('GET')
    const { token, setCookie } = csrfTokenOf(request, basePath)
    const cookie: Record<string, string> = setCookie ? { 'set-cookie': setCookie } : {}
    const ctx = pageContext(request, url, Date.now(), token, basePath === settings.basePath ? settings : { ...settings, basePath })
    const render = (page: Page) => htmlResponse(layout(ctx, page, startedAt), page.status ?? 200, cookie)
    const frame = (status: number, title: string, message: string) =>
      render({ status, title, section: 'none', body: html`<h1>${title}</h1>${problem('', message)}` })
    if ('notFound' in found) return frame(404, 'Not found', 'No such page in the console.')
    if ('badParam' in found) return frame(400, 'Bad id', 'That id cannot be read (bad percent-encoding, or too long).')
    let result: PageResult
    try {
      if (found.method === 'GET') {
        if (request.method !== 'GET' && request.method !== 'HEAD') return notAllowed('GET')
        result = await found.run(ctx, found.param)
      } else {
        if (request.method !== 'POST') return notAllowed('POST')
        const form = await readForm(request)
        if (!(form instanceof URLSearchParams)) return frame(form.status, 'Refused', form.problem)
        if (!fromSameOrigin(request) || !csrfTokenMatches(request, form)) {
          return frame(
            403,
            'Refused',
            'This request did not come from a page of the console (cross-site, or its form token is missing or stale): reload the page and try again.',
          )
        }
        if (found.action && !settings.actions)
          return frame(403, 'Read-only', 'This console is read-only: mount it with actions: true to retry and purge.')
        result = await found.run(ctx, form)
      }
    } catch (error) {
      return frame(500, 'The console failed', `The page could not be built: ${problemOf(error)}`)
    }
    return 'redirect' in result ? seeOther(result.redirect, cookie) : render(result)
  }
}

function notAllowed(allow: string): Response {
  return plainPage(405, 'Method not allowed', `This path answers ${allow} only.`, { allow })
}
