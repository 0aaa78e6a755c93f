/**
 * Every answer of the console carries the same protective headers: a Content-Security-Policy that
 * allows nothing but the console's own stylesheet (no script at all, no frame, forms only to
 * itself), no caching, no sniffing, no framing, and referrers only to the console itself (which
 * keeps `Origin` on its own form posts).
 */
import { CONSOLE_CSS } from './style.js'

/** The console's Content-Security-Policy. */
export const CONSOLE_CSP = "default-src 'none'; style-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

const SECURITY_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'content-security-policy': CONSOLE_CSP,
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'same-origin',
  'cache-control': 'no-store',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
  'x-robots-tag': 'noindex',
})

/** An HTML answer. */
export function htmlResponse(body: string, status: number, extra: Record<string, string> = {}): Response {
  return new Response(body, { status, headers: { ...SECURITY_HEADERS, 'content-type': 'text/html; charset=utf-8', ...extra } })
}

/** The stylesheet. */
export function cssResponse(): Response {
  return new Response(CONSOLE_CSS, { status: 200, headers: { ...SECURITY_HEADERS, 'content-type': 'text/css; charset=utf-8' } })
}

/** A plain page for answers given before the layout can be used (not signed in, outside the console). */
export function plainPage(status: number, title: string, text: string, extra: Record<string, string> = {}): Response {
  const escaped = text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)
  return htmlResponse(
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${title}</title></head><body><h1>${title}</h1><p>${escaped}</p></body></html>`,
    status,
    extra,
  )
}

/** 303 to `location` (after an action). */
export function seeOther(location: string, extra: Record<string, string> = {}): Response {
  return new Response(null, { status: 303, headers: { ...SECURITY_HEADERS, location, ...extra } })
}

/** The most bytes of a form the console reads. */
const MAX_FORM_BYTES = 64 * 1024

/** The request's urlencoded form, or why it cannot be read. */
export async function readForm(request: Request): Promise<URLSearchParams | { status: number; problem: string }> {
  const type = request.headers.get('content-type') ?? ''
  if (!/^application\/x-www-form-urlencoded\b/i.test(type))
    return { status: 415, problem: 'The console takes forms (application/x-www-form-urlencoded) only.' }
  const declared = Number(request.headers.get('content-length') ?? '0')
  if (declared > MAX_FORM_BYTES) return { status: 413, problem: 'That form is too large.' }
  const reader = request.body?.getReader()
  if (!reader) return new URLSearchParams()
  const chunks: Uint8Array[] = []
  let total = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    total += value.byteLength
    if (total > MAX_FORM_BYTES) {
      await reader.cancel().catch(() => {})
      return { status: 413, problem: 'That form is too large.' }
    }
    chunks.push(value)
  }
  const bytes = new Uint8Array(total)
  let offset = 0
  for (const chunk of chunks) {
    bytes.set(chunk, offset)
    offset += chunk.byteLength
  }
  return new URLSearchParams(new TextDecoder().decode(bytes))
}
