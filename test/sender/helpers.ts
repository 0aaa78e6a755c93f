/**
 * Helpers of the sender suites: a programmable receiver on 127.0.0.1 that verifies each POST
 * with the real `verifyWebhook`, and a way to listen with any fetch-style app.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { verifyWebhook } from '@email-webhooks/core'

/** What the programmable receiver saw of one POST. */
export interface SeenPost {
  id: string
  timestamp: string
  signature: string
  verified: boolean
  body: string
}

/** What the receiver answers: a status, a status with `Retry-After`, a redirect to `to`, or no answer for `ms`. */
export type Reply = number | { status: number; retryAfter: string } | { redirect: string } | { hangMs: number }

/** Starts a receiver on 127.0.0.1:0 that answers with `reply(post, index)`. */
export async function startReceiver(
  secret: () => string,
  reply: (post: SeenPost, index: number) => Reply,
): Promise<{ url: string; posts: SeenPost[]; close(): Promise<void> }> {
  const posts: SeenPost[] = []
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', async () => {
      const body = Buffer.concat(chunks)
      let verified = true
      try {
        await verifyWebhook({ headers: req.headers as Record<string, string>, body, secret: secret() })
      } catch {
        verified = false
      }
      const post: SeenPost = {
        id: String(req.headers['webhook-id']),
        timestamp: String(req.headers['webhook-timestamp']),
        signature: String(req.headers['webhook-signature']),
        verified,
        body: body.toString('utf8'),
      }
      posts.push(post)
      const answer = reply(post, posts.length - 1)
      if (typeof answer === 'number') {
        res.writeHead(answer, { 'content-type': 'application/json' }).end('{}')
      } else if ('retryAfter' in answer) {
        res.writeHead(answer.status, { 'content-type': 'application/json', 'retry-after': answer.retryAfter }).end('{}')
      } else if ('redirect' in answer) {
        res.writeHead(302, { location: answer.redirect }).end()
      } else {
        setTimeout(() => res.writeHead(200).end('{}'), answer.hangMs)
      }
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as AddressInfo).port
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    posts,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      }),
  }
}
