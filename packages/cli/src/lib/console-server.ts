/**
 * The loopback server of `email-webhooks console`: core's console on 127.0.0.1 only, signed in by
 * a one-time link. The link's token is good for one visit: that visit gets a session cookie
 * (HttpOnly, SameSite=Strict) and is sent on to the same page without the token, so the token
 * neither stays in the address bar nor works again from the history. A request whose Host is not
 * this server's own loopback address is refused before anything else (a web page that points a
 * DNS name of its own at 127.0.0.1 cannot reach the console). Nothing is logged per request.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { DedupStore } from '@email-webhooks/core'
import { consoleRequestFromNode, emailWebhookConsole, writeConsoleResponse } from '@email-webhooks/core/console'

/** The cookie of the signed-in browser. */
const SESSION_COOKIE = 'ewc_session'

/** What the server needs. */
export interface ConsoleServerOptions {
  store: DedupStore
  /** 0: any free port. */
  port: number
  actions: boolean
  namespace: string
  retentionMs: number | undefined
}

/** A running console server. */
export interface ConsoleServer {
  /** The one-time link that signs a browser in. */
  url: string
  port: number
  close(): Promise<void>
}

function randomToken(): string {
  return Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('base64url')
}

function sameText(a: string, b: string): boolean {
  if (a.length !== b.length) return false
  let diff = 0
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i)
  return diff === 0
}

function cookieOf(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const eq = part.indexOf('=')
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim()
  }
  return undefined
}

function refuse(res: ServerResponse, status: number, text: string): void {
  res.statusCode = status
  res.setHeader('content-type', 'text/plain; charset=utf-8')
  res.setHeader('cache-control', 'no-store')
  res.end(`${text}\n`)
}

/**
 * Starts the console on 127.0.0.1.
 * @param options The store, the port, and the console's options.
 * @throws {WebhookConsoleError} when the console's options are unusable; the `listen` error when the port is taken.
 * @example
 * const { url, close } = await startConsoleServer({ store, port: 0, actions: false, namespace: 'default', retentionMs: undefined })
 */
export async function startConsoleServer(options: ConsoleServerOptions): Promise<ConsoleServer> {
  let linkToken: string | undefined = randomToken()
  const session = randomToken()
  const handler = emailWebhookConsole({
    store: options.store,
    actions: options.actions,
    namespace: options.namespace,
    ...(options.retentionMs === undefined ? {} : { retentionMs: options.retentionMs }),
    // The link's visit got the session cookie; nothing else is let in.
    auth: (request) => sameText(cookieOf(request.headers.get('cookie') ?? undefined, SESSION_COOKIE) ?? '', session),
  })
  let hosts: string[] = []
  async function serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (!hosts.includes(req.headers.host ?? '')) {
      return refuse(res, 421, `This console answers only at ${hosts[0]}: open the link email-webhooks console printed.`)
    }
    const url = new URL(req.url ?? '/', `http://${req.headers.host}`)
    const token = url.searchParams.get('token')
    if (token !== null) {
      if (linkToken === undefined || !sameText(token, linkToken)) {
        return refuse(
          res,
          401,
          'This sign-in link was already used (or is not this run\u2019s): start `email-webhooks console` again for a new one.',
        )
      }
      linkToken = undefined
      url.searchParams.delete('token')
      res.statusCode = 303
      res.setHeader('set-cookie', `${SESSION_COOKIE}=${session}; Path=/; HttpOnly; SameSite=Strict`)
      res.setHeader('location', `${url.pathname}${url.search}`)
      res.setHeader('cache-control', 'no-store')
      res.end()
      return
    }
    const request = await consoleRequestFromNode(req, { path: req.url ?? '/' })
    await writeConsoleResponse(res, await handler.handle(request))
  }
  const server: Server = createServer((req, res) => {
    serve(req, res).catch(() => refuse(res, 500, 'The console failed to answer this request.'))
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(options.port, '127.0.0.1', () => resolve())
  })
  const port = (server.address() as AddressInfo).port
  hosts = [`127.0.0.1:${port}`, `localhost:${port}`]
  return {
    url: `http://127.0.0.1:${port}/?token=${linkToken}`,
    port,
    close: async () => {
      handler.close()
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
