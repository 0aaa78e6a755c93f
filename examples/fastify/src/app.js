// A Fastify app that receives the email service's webhooks on POST /hooks, beside its own JSON API.
import { emailWebhook } from '@email-webhooks/fastify'
import Fastify from 'fastify'

/**
 * @param {object} options
 * @param {string | string[]} options.secret the endpoint secret(s)
 * @param {import('@email-webhooks/core').DedupStore} [options.store] dedup store (default: SQLite file)
 * @param {(emailId: string) => Promise<void> | void} options.markBounced what to do when an email bounced
 */
export async function createApp({ secret, store, markBounced }) {
  const app = Fastify()
  // The rest of the app keeps Fastify's JSON parsing: the plugin's raw-body parser is its own.
  app.post('/api/notes', async (request) => ({ saved: request.body }))
  await app.register(emailWebhook, {
    path: '/hooks',
    secret,
    handlers: {
      'email.bounced': async (event) => markBounced(event.data.id),
    },
    ...(store ? { store } : {}),
  })
  return app
}
