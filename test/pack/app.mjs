// The app that the pack test installs from the packed tarballs into a fresh folder outside the
// workspace: it serves one adapter over real HTTP on 127.0.0.1 (the Lambda handler is invoked with a
// function-URL event instead) and prints the answers as JSON.
// Usage: node app.mjs <express|hono|fastify|koa|lambda|fetch> <delivery.json> — the delivery file holds the signed
// delivery to send (written by `node app.mjs sign <file>` on first use, so a second process can
// redeliver the same event to the same SQLite file).
import { existsSync, readFileSync, writeFileSync } from 'node:fs'

const [adapter, deliveryFile] = process.argv.slice(2)

async function signedDelivery() {
  const { createSignedDelivery } = await import('@email-webhooks/core/testing')
  if (existsSync(deliveryFile)) return JSON.parse(readFileSync(deliveryFile, 'utf8'))
  const { headers, body } = await createSignedDelivery({ type: 'email.bounced' })
  writeFileSync(deliveryFile, JSON.stringify({ headers, body }))
  return { headers, body }
}

/** Starts the adapter's app on a free port; resolves to its URL and a close function. */
async function start(handlers, secret) {
  const { MemoryDedupStore } = await import('@email-webhooks/core')
  if (adapter === 'fastify') {
    const { emailWebhook } = await import('@email-webhooks/fastify')
    const { default: Fastify } = await import('fastify')
    const app = Fastify()
    await app.register(emailWebhook, { path: '/hooks', secret, handlers, store: new MemoryDedupStore() })
    const url = await app.listen({ port: 0, host: '127.0.0.1' })
    return { url: `${url}/hooks`, close: () => app.close() }
  }
  if (adapter === 'koa') {
    const { emailWebhook } = await import('@email-webhooks/koa')
    const { default: Koa } = await import('koa')
    const { default: Router } = await import('@koa/router')
    const app = new Koa()
    const router = new Router()
    router.post('/hooks', emailWebhook(secret, handlers, { store: new MemoryDedupStore() }))
    app.use(router.routes())
    const server = app.listen(0, '127.0.0.1')
    await new Promise((resolve) => server.once('listening', resolve))
    return { url: `http://127.0.0.1:${server.address().port}/hooks`, close: () => server.close() }
  }
  if (adapter === 'express') {
    const { emailWebhook } = await import('@email-webhooks/express')
    const { default: express } = await import('express')
    const app = express()
    app.post('/hooks', emailWebhook(secret, handlers)) // default store: SQLite at EMAIL_WEBHOOKS_DB
    const server = app.listen(0, '127.0.0.1')
    await new Promise((resolve) => server.once('listening', resolve))
    return { url: `http://127.0.0.1:${server.address().port}/hooks`, close: () => server.close() }
  }
  const { serve } = await import('@hono/node-server')
  let fetch
  if (adapter === 'hono') {
    const { emailWebhook } = await import('@email-webhooks/hono')
    const { Hono } = await import('hono')
    const app = new Hono()
    app.post('/hooks', emailWebhook(secret, handlers, { store: new MemoryDedupStore() }))
    fetch = app.fetch
  } else {
    const { emailWebhook } = await import('@email-webhooks/core')
    const handle = emailWebhook(secret, handlers, { store: new MemoryDedupStore() })
    fetch = (request) => handle(request)
  }
  return new Promise((resolve) => {
    const server = serve({ fetch, hostname: '127.0.0.1', port: 0 }, (info) =>
      resolve({ url: `http://127.0.0.1:${info.port}/hooks`, close: () => server.close() }),
    )
  })
}

/** The Lambda handler, invoked as a function URL invokes it: resolves to a `post(body)` and a close function. */
async function startLambda(handlers, secret, delivery) {
  const { emailWebhook } = await import('@email-webhooks/lambda')
  const handler = emailWebhook(secret, handlers, { store: 'memory', logger: false })
  const context = { functionName: 'pack-test', awsRequestId: 'pack-test' }
  const post = async (body) => {
    const event = { version: '2.0', headers: delivery.headers, body, isBase64Encoded: false, requestContext: { http: { method: 'POST' } } }
    const result = await handler(event, context)
    return { status: result.statusCode, json: JSON.parse(result.body) }
  }
  return { post, close: () => {} }
}

const { TEST_SECRET } = await import('@email-webhooks/core/testing')
const handled = []
const handlers = { 'email.bounced': (event) => void handled.push(event.data.id) }
const delivery = await signedDelivery()
const { post, close } =
  adapter === 'lambda'
    ? await startLambda(handlers, TEST_SECRET, delivery)
    : await start(handlers, TEST_SECRET).then(({ url, close }) => ({
        close,
        post: async (body) => {
          const res = await fetch(url, { method: 'POST', headers: delivery.headers, body })
          return { status: res.status, json: await res.json() }
        },
      }))
const first = await post(delivery.body)
const again = await post(delivery.body)
const tampered = await post(delivery.body.replace('bounced', 'queued'))
close()
console.log(JSON.stringify({ first, again, tampered, handled }))
