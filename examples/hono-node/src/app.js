// A Hono app that receives the email service's webhooks on POST /hooks.
import { emailWebhook } from '@email-webhooks/hono'
import { Hono } from 'hono'

/**
 * @param {object} options
 * @param {string | string[]} options.secret the endpoint secret(s)
 * @param {import('@email-webhooks/core').DedupStore} [options.store] dedup store (default: SQLite file on Node)
 * @param {(emailId: string) => Promise<void> | void} options.markBounced what to do when an email bounced
 */
export function createApp({ secret, store, markBounced }) {
  const app = new Hono()
  app.post(
    '/hooks',
    emailWebhook(
      secret,
      {
        'email.bounced': async (event) => markBounced(event.data.id),
      },
      store ? { store } : {},
    ),
  )
  app.get('/health', (c) => c.json({ ok: true }))
  return app
}
