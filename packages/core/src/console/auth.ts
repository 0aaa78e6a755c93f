/**
 * Authentication of every console request: basic-auth credentials compared in constant time (the
 * SHA-256 digests of `username:password`, so neither length nor content shows in the timing), or
 * the app's own check. Nothing else is served to a request that fails it, not even the stylesheet.
 */
import type { ConsoleAuth, ConsoleCredentials } from './options.js'

/** The realm the browser shows in its sign-in prompt. */
const REALM = 'email-webhooks console'

const encoder = new TextEncoder()

async function digest(text: string): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest('SHA-256', encoder.encode(text)))
}

/** Equal bytes, in time that depends only on the length (both are 32-byte digests here). */
function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false
  let diff = 0
  for (let i = 0; i < a.length; i++) diff |= (a[i] as number) ^ (b[i] as number)
  return diff === 0
}

/** `username:password` of a basic `Authorization` header, or undefined when there is none or it is malformed. */
function basicPair(header: string | null): string | undefined {
  const match = header === null ? null : /^Basic\s+([A-Za-z0-9+/]+=*)\s*$/i.exec(header)
  if (!match) return undefined
  try {
    const bytes = Uint8Array.from(atob(match[1] as string), (c) => c.charCodeAt(0))
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes)
  } catch {
    return undefined
  }
}

/** A request's verdict, and what to send when it failed. */
export type AuthVerdict = { ok: true } | { ok: false; challenge: string | undefined }

/**
 * Builds the check of every request.
 * @param auth The resolved `auth` option.
 */
export function createAuthenticator<Ctx>(auth: ConsoleAuth<Ctx>): (request: Request, context: Ctx) => Promise<AuthVerdict> {
  if (typeof auth === 'function') {
    return async function checkConsoleAuth(request, context) {
      let allowed = false
      try {
        allowed = (await auth(request, context)) === true
      } catch {
        // A check that throws lets nobody in.
      }
      return allowed ? { ok: true } : { ok: false, challenge: undefined }
    }
  }
  const { username, password } = auth as ConsoleCredentials
  const expected = digest(`${username}:${password}`)
  const challenge = `Basic realm="${REALM}", charset="UTF-8"`
  return async function checkConsoleCredentials(request) {
    const pair = basicPair(request.headers.get('authorization'))
    // A missing header is digested too, so a wrong and a missing one take the same time.
    const ok = sameBytes(await digest(pair ?? ''), await expected) && pair !== undefined
    return ok ? { ok: true } : { ok: false, challenge }
  }
}
