/**
 * The bridge the Node adapters (Express, Koa, Fastify) share: a Node request as a web `Request`
 * for the console, and the console's `Response` written back. Runtime-neutral code (no `node:`
 * import, no `Buffer`). A form a body parser already parsed (express.urlencoded, koa-bodyparser)
 * is encoded again as a form: only the console reads it, and no signature covers it.
 */

/** The most bytes of a request body the bridge reads (the console takes forms up to 64 KiB). */
const MAX_BRIDGED_BYTES = 64 * 1024 + 1

/** The part of a Node `IncomingMessage` the bridge uses. */
export interface NodeConsoleRequest {
  method?: string | undefined
  headers: Record<string, string | string[] | undefined>
  readableEnded?: boolean
  [Symbol.asyncIterator](): AsyncIterator<unknown>
}

/** The part of a Node `ServerResponse` the bridge uses. */
export interface NodeConsoleResponse {
  statusCode: number
  setHeader(name: string, value: string | string[]): unknown
  end(body?: Uint8Array | string): unknown
}

/** How the adapter sees the request. */
export interface NodeRequestParts {
  /** The full path and query as the browser sent it (Express's `req.originalUrl`, Koa's `ctx.originalUrl`). */
  path: string
  /** `https` behind TLS (your framework's view of it, trust-proxy settings included); default `http`. */
  protocol?: string
  /** What a body parser left on the request (`req.body`), if any. */
  parsedBody?: unknown
}

async function bodyOf(req: NodeConsoleRequest, parsed: unknown): Promise<Uint8Array | string | undefined> {
  if (parsed instanceof Uint8Array || typeof parsed === 'string') return parsed
  if (parsed !== null && typeof parsed === 'object' && Object.keys(parsed).length > 0) {
    const form = new URLSearchParams()
    for (const [name, value] of Object.entries(parsed as Record<string, unknown>)) {
      for (const item of Array.isArray(value) ? value : [value]) form.append(name, String(item))
    }
    return form.toString()
  }
  if (req.readableEnded) return undefined
  const chunks: Uint8Array[] = []
  let total = 0
  for await (const chunk of req as AsyncIterable<Uint8Array | string>) {
    const bytes = typeof chunk === 'string' ? new TextEncoder().encode(chunk) : chunk
    chunks.push(bytes)
    total += bytes.byteLength
    if (total >= MAX_BRIDGED_BYTES) break
  }
  const out = new Uint8Array(total)
  let offset = 0
  for (const chunk of chunks) {
    out.set(chunk, offset)
    offset += chunk.byteLength
  }
  return out
}

/**
 * A Node request as a web `Request` for the console.
 * @param req The Node request.
 * @param parts Its full path, protocol and parsed body.
 * @throws {TypeError} when its Host header and path do not make a URL.
 * @example
 * const request = await consoleRequestFromNode(req, { path: req.originalUrl, protocol: req.protocol, parsedBody: req.body })
 */
export async function consoleRequestFromNode(req: NodeConsoleRequest, parts: NodeRequestParts): Promise<Request> {
  const host = typeof req.headers.host === 'string' ? req.headers.host : 'localhost'
  const url = new URL(
    `${parts.protocol === 'https' ? 'https' : 'http'}://${host}${parts.path.startsWith('/') ? parts.path : `/${parts.path}`}`,
  )
  const headers = new Headers()
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined || name.startsWith(':')) continue
    headers.set(name, Array.isArray(value) ? value.join(', ') : value)
  }
  const method = (req.method ?? 'GET').toUpperCase()
  if (method === 'GET' || method === 'HEAD') return new Request(url, { method, headers })
  const body = await bodyOf(req, parts.parsedBody)
  // The bytes are read here: the stream's framing headers no longer describe them.
  headers.delete('content-length')
  headers.delete('transfer-encoding')
  return new Request(url, { method, headers, ...(body === undefined ? {} : { body: body as BodyInit }) })
}

/**
 * Writes the console's answer to a Node response.
 * @param res The Node response.
 * @param response The console's answer.
 * @example
 * await writeConsoleResponse(res, await handleConsole.handle(request, { basePath: req.baseUrl }))
 */
export async function writeConsoleResponse(res: NodeConsoleResponse, response: Response): Promise<void> {
  res.statusCode = response.status
  response.headers.forEach((value, name) => {
    if (name !== 'set-cookie') res.setHeader(name, value)
  })
  const cookies = response.headers.getSetCookie()
  if (cookies.length > 0) res.setHeader('set-cookie', cookies)
  res.end(new Uint8Array(await response.arrayBuffer()))
}
