/**
 * A round-robin HTTP load balancer on 127.0.0.1 in front of several receiver instances, as a
 * proxy would be: a backend that refuses the connection (killed, not yet restarted) is skipped
 * before anything was sent; a backend that dies with the request in it answers 502 (a POST is
 * not sent twice); no backend at all answers 502.
 */
import http from 'node:http'
import type { AddressInfo } from 'node:net'

export interface Balancer {
  url: string
  close(): Promise<void>
}

export async function startBalancer(ports: () => number[]): Promise<Balancer> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 })
  let turn = 0
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      const body = Buffer.concat(chunks)
      const backends = ports()
      const first = turn++
      const tryBackend = (n: number): void => {
        if (n >= backends.length) {
          res.writeHead(502, { 'content-type': 'application/json' }).end('{"error":{"code":"bad_gateway","message":"no backend"}}')
          return
        }
        const port = backends[(first + n) % backends.length] as number
        let sent = false
        const upstream = http.request(
          { host: '127.0.0.1', port, path: req.url, method: req.method, headers: req.headers, agent },
          (answer) => {
            res.writeHead(answer.statusCode ?? 502, answer.headers)
            answer.pipe(res)
          },
        )
        upstream.on('socket', (socket) => {
          if (socket.connecting) socket.once('connect', () => (sent = true))
          else sent = true
        })
        upstream.on('error', (error: NodeJS.ErrnoException) => {
          if (res.headersSent) return res.destroy()
          if (!sent || error.code === 'ECONNREFUSED') return tryBackend(n + 1)
          res.writeHead(502, { 'content-type': 'application/json' }).end('{"error":{"code":"bad_gateway","message":"backend failed"}}')
        })
        upstream.end(body)
      }
      tryBackend(0)
    })
  })
  server.keepAliveTimeout = 30_000
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
    close: () =>
      new Promise((resolve) => {
        agent.destroy()
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}
