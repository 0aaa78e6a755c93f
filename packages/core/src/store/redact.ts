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
