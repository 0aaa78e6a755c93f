/**
 * The hand-written receiver on each framework, as a user would mount it: Hono reads the body with
 * `arrayBuffer()` and answers with `c.body`; Express reads it with `express.raw` and answers with
 * `res.status().set().send()`. A store that fails (a database down) answers 503: the sender retries.
 */
import { createHandReceiver } from './receiver.js'

const UNAVAILABLE = { status: 503, headers: { 'content-type': 'application/json' }, body: '{"ok":false,"error":"store_unavailable"}' }

function safely(receive) {
  return (id, timestamp, signature, body) => receive(id, timestamp, signature, body).catch(() => UNAVAILABLE)
}

/** Hono route handler: `app.post('/hooks', handRoute(options))`. */
export function honoHandRoute(options) {
  const receive = safely(createHandReceiver(options))
  return async (c) => {
    const body = Buffer.from(await c.req.arrayBuffer())
    const result = await receive(c.req.header('webhook-id'), c.req.header('webhook-timestamp'), c.req.header('webhook-signature'), body)
    return c.body(result.body, result.status, result.headers)
  }
}

/** Express 5 middleware list: `app.post('/hooks', ...expressHandRoute(express, options))`. */
export function expressHandRoute(express, options) {
  const receive = safely(createHandReceiver(options))
  return [
    express.raw({ type: '*/*', limit: '1mb' }),
    async (req, res) => {
      const body = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0)
      const result = await receive(req.headers['webhook-id'], req.headers['webhook-timestamp'], req.headers['webhook-signature'], body)
      res.status(result.status).set(result.headers).send(result.body)
    },
  ]
}
