/**
 * Cross-site protection of every POST, two checks that must both pass: the request comes from a
 * page of the same host (`Origin`, else `Sec-Fetch-Site`, else `Referer`; none at all is refused),
 * and its form carries the token of the console's cookie (double submit: a random value in an
 * HttpOnly, SameSite=Strict cookie, copied into each form by the page that shows it). A page of
 * another site can neither read the token nor, with SameSite=Strict, send the cookie.
 */

/** The cookie that holds the token. */
export const CSRF_COOKIE = 'ewc_csrf'
/** The form field that carries it. */
export const CSRF_FIELD = 'csrf'

const TOKEN = /^[A-Za-z0-9_-]{43}$/

function newToken(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32))
  return btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    .replace(/=+$/, '')
}

/** The value of cookie `name` in the request, if any. */
export function cookieOf(request: Request, name: string): string | undefined {
  const header = request.headers.get('cookie')
  if (header === null) return undefined
  for (const part of header.split(';')) {
    const eq = part.indexOf('=')
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim()
  }
  return undefined
}

/**
 * The request's token, and the `Set-Cookie` header value when it had none yet.
 * @param basePath The console's path: the cookie is sent only there.
 */
export function csrfTokenOf(request: Request, basePath: string): { token: string; setCookie: string | undefined } {
  const held = cookieOf(request, CSRF_COOKIE)
  if (held !== undefined && TOKEN.test(held)) return { token: held, setCookie: undefined }
  const token = newToken()
  const secure = new URL(request.url).protocol === 'https:' ? '; Secure' : ''
  return { token, setCookie: `${CSRF_COOKIE}=${token}; Path=${basePath || '/'}; HttpOnly; SameSite=Strict${secure}` }
}

function hostOf(url: string): string | undefined {
  try {
    return new URL(url).host
  } catch {
    return undefined
  }
}

/** The request comes from a page of the console's own host. */
export function fromSameOrigin(request: Request): boolean {
  const host = new URL(request.url).host
  const site = request.headers.get('sec-fetch-site')
  if (site !== null && site !== 'same-origin') return false
  const origin = request.headers.get('origin')
  if (origin !== null) return origin !== 'null' && hostOf(origin) === host
  if (site !== null) return true
  const referer = request.headers.get('referer')
  return referer !== null && hostOf(referer) === host
}

/** The form's token is the cookie's (compared in constant time). */
export function csrfTokenMatches(request: Request, form: URLSearchParams): boolean {
  const held = cookieOf(request, CSRF_COOKIE)
  const sent = form.get(CSRF_FIELD)
  if (held === undefined || sent === null || !TOKEN.test(held) || held.length !== sent.length) return false
  let diff = 0
  for (let i = 0; i < held.length; i++) diff |= held.charCodeAt(i) ^ sent.charCodeAt(i)
  return diff === 0
}
