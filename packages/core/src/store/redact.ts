/** Connection strings in messages: the password never appears. Bundled into each store subpath. */

/**
 * Shows a connection URL with its password (and any password query parameter) replaced by `***`,
 * so it can be named in an error message.
 */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url)
    if (parsed.password) parsed.password = '***'
    for (const name of ['password', 'pass', 'sslpassword']) if (parsed.searchParams.has(name)) parsed.searchParams.set(name, '***')
    return parsed.toString()
  } catch {
    return '(a connection string that is not a valid URL)'
  }
}

/** The password in a connection URL, when it is long enough (3+ characters) to be scrubbed from text safely. */
export function passwordOf(url: string): string | undefined {
  try {
    const password = decodeURIComponent(new URL(url).password)
    return password.length >= 3 ? password : undefined
  } catch {
    return undefined
  }
}

/** `text` with every occurrence of `secret` replaced by `***`. */
export function scrub(text: string, secret: string | undefined): string {
  return secret ? text.split(secret).join('***') : text
}
