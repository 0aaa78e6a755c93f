/**
 * Serves a faithful sender's management API on 127.0.0.1 for Node tests and the CLI. Node's
 * http module is imported dynamically, so the testing entry stays loadable on other runtimes.
 */
import type { FaithfulSender } from './sender-types.js'

function concat(chunks: Uint8Array[]): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.byteLength, 0))
  let at = 0
  for (const c of chunks) {
    out.set(c, at)
    at += c.byteLength
  }
  return out
}

/** A running listener of {@link listenSender}. */
export interface SenderListener {
  /** e.g. `http://127.0.0.1:41234`. */
  url: string
  /** The API's base URL: `url` + `/v1`. */
  baseUrl: string
  /** Stops listening and closes open connections. */
  close(): Promise<void>
}

/**
 * Listens on `127.0.0.1` (port 0 by default: a free port) and answers with `sender.fetch`. Node only.
 *
 * @param sender A sender from `createFaithfulSender`.
 * @param options.port Port; default 0.
 * @throws {Error} when `node:http` is unavailable or the port cannot be bound.
 * @example
 * const api = await listenSender(sender)
 * const client = createWebhooksClient({ apiKey: TEST_API_KEY, baseUrl: api.baseUrl })
 * await api.close()
 */
export async function listenSender(sender: Pick<FaithfulSender, 'fetch'>, options: { port?: number } = {}): Promise<SenderListener> {
  // A specifier bundlers cannot see: bundling the testing kit for a Worker or a browser (esbuild,
  // Vite) must not fail on a Node built-in that only this Node-only helper loads, on first call.
  const specifier = 'node:http'
  const http = (await import(/* @vite-ignore */ specifier)) as typeof import('node:http')
  const server = http.createServer((req, res) => {
    const chunks: Uint8Array[] = []
    req.on('data', (chunk: Uint8Array) => chunks.push(chunk))
    req.on('end', () => {
      const headers = new Headers()
      for (const [name, value] of Object.entries(req.headers)) {
        if (typeof value === 'string') headers.set(name, value)
        else if (Array.isArray(value)) for (const v of value) headers.append(name, v)
      }
      const hasBody = req.method !== 'GET' && req.method !== 'HEAD'
      const body = hasBody ? concat(chunks) : undefined
      const request = new Request(`http://127.0.0.1${req.url ?? '/'}`, { method: req.method ?? 'GET', headers, ...(body ? { body } : {}) })
      sender
        .fetch(request)
        .then(async (response) => {
          const text = await response.text()
          res.writeHead(response.status, Object.fromEntries(response.headers))
          res.end(text)
        })
        .catch(() => {
          res.writeHead(500, { 'content-type': 'application/json' })
          res.end('{"error":{"code":"internal_error","message":"The faithful sender failed."}}')
        })
    })
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve())
  })
  const address = server.address()
  const port = typeof address === 'object' && address ? address.port : 0
  const url = `http://127.0.0.1:${port}`
  return {
    url,
    baseUrl: `${url}/v1`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections?.()
      }),
  }
}
