// A Koa app that receives the email service's webhooks on POST /hooks, beside its own JSON API.
import { emailWebhook } from '@email-webhooks/koa'
import { bodyParser } from '@koa/bodyparser'
import Router from '@koa/router'
import Koa from 'koa'

/**
 * @param {object} options
 * @param {string | string[]} options.secret the endpoint secret(s)
 * @param {import('@email-webhooks/core').DedupStore} [options.store] dedup store (default: SQLite file)
 * @param {(emailId: string) => Promise<void> | void} options.markBounced what to do when an email bounced
 */
export function createApp({ secret, store, markBounced }) {
  const app = new Koa()
  // The webhook route comes before the body parser: the adapter reads the exact bytes itself.
  const hooks = new Router()
  hooks.post('/hooks', emailWebhook(secret, { 'email.bounced': async (event) => markBounced(event.data.id) }, store ? { store } : {}))
  app.use(hooks.routes())
  app.use(bodyParser())
  const api = new Router()
  api.post('/api/notes', (ctx) => {
    ctx.body = { saved: ctx.request.body }
  })
  app.use(api.routes())
  return app
}
