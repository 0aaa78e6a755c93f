/**
 * The URL rules of the sender's management API, in one place: which hosts count as this machine
 * (loopback: where plain HTTP is allowed for tests, by the client and by the faithful sender), and
 * which webhook endpoint URLs the service accepts (`POST /webhooks`: public HTTPS on port 443, no
 * credentials, no fragment, no private address). No DNS lookup: names are judged as written.
 */

/** Loopback hosts as `URL.hostname` gives them: `localhost`, 127.0.0.0/8 (`127.1` is `127.0.0.1` by then), `[::1]`. */
const LOOPBACK_HOST = /^(localhost|127(\.(25[0-5]|2[0-4]\d|1?\d?\d)){3}|\[::1\])$/i

const PRIVATE_V4 = [
  /^10\./,
  /^127\./,
  /^0\./,
  /^169\.254\./,
  /^192\.168\./,
  /^172\.(1[6-9]|2\d|3[01])\./,
  /^100\.(6[4-9]|[7-9]\d|1[01]\d|12[0-7])\./,
]

/** Why the service would refuse an endpoint URL: its error code and the field message. */
export interface EndpointUrlProblem {
  code: 'validation_error' | 'invalid_webhook' | 'unsafe_webhook'
  message: string
}

/**
 * Whether a URL's hostname is this machine's loopback: `localhost`, any address in 127.0.0.0/8, or `[::1]`.
 *
 * @param hostname A `URL.hostname` (IPv6 in brackets).
 * @returns True for a loopback host.
 * @throws Never.
 * @example
 * isLoopbackHost(new URL('http://127.0.0.2:3000/hooks').hostname) // true
 */
export function isLoopbackHost(hostname: string): boolean {
  return LOOPBACK_HOST.test(hostname)
}

/**
 * Checks an endpoint URL against the service's rules for `POST /webhooks`, as the service would.
 *
 * @param raw The URL (anything: non-strings are a validation error).
 * @param allowLocal Accept `http(s)://` to a loopback host on any port (the faithful sender's test mode; the service refuses them).
 * @returns Null when acceptable, else the error code and field message the service answers.
 * @throws Never.
 * @example
 * checkEndpointUrl('https://172.16.5.4/hooks', false) // { code: 'unsafe_webhook', message: 'url must point at a public address' }
 */
export function checkEndpointUrl(raw: unknown, allowLocal: boolean): EndpointUrlProblem | null {
  if (typeof raw !== 'string' || raw.length === 0) return { code: 'validation_error', message: 'url is required (a string)' }
  if (raw.length > 2000) return { code: 'validation_error', message: 'url must be at most 2000 characters' }
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    return { code: 'validation_error', message: 'url must be a URI' }
  }
  if (url.username || url.password) return { code: 'invalid_webhook', message: 'url must not contain credentials' }
  if (url.hash || raw.includes('#')) return { code: 'invalid_webhook', message: 'url must not contain a fragment' }
  if (allowLocal && isLoopbackHost(url.hostname) && (url.protocol === 'http:' || url.protocol === 'https:')) return null
  if (url.protocol !== 'https:') return { code: 'invalid_webhook', message: 'url must use https' }
  if (url.port !== '' && url.port !== '443') return { code: 'unsafe_webhook', message: 'url must use port 443' }
  const host = url.hostname.toLowerCase()
  const privateHost =
    isLoopbackHost(host) ||
    /\.(localhost|local|internal)$/.test(host) ||
    PRIVATE_V4.some((r) => r.test(host)) ||
    (host.startsWith('[') && /^\[(::1?|f[cd][0-9a-f]{0,2}:|fe[89ab][0-9a-f]?:)/.test(host))
  return privateHost ? { code: 'unsafe_webhook', message: 'url must point at a public address' } : null
}
