// server/api/hooks.post.ts: a Nuxt server route, on Nitro's Node server (h3 1). Nitro hands h3 Node's
// own request and response, and @email-webhooks/express uses only those (never Express itself), so
// its middleware mounts as an h3 event handler: it reads the exact bytes under maxBodyBytes (413
// past it) and keeps dedup in a SQLite file (./.email-webhooks, or EMAIL_WEBHOOKS_DB).
// (toWebRequest + core's fetch handler would do for bodies under the limit, but h3 1's request
// stream throws an uncaught error when a reader stops early, as the fetch handler does past it.)
import { emailWebhook } from '@email-webhooks/express'
import { fromNodeMiddleware } from 'h3'
import { markBounced } from '../utils/db'

const secret = process.env.EMAIL_WEBHOOK_SECRET
if (!secret) throw new Error('Set EMAIL_WEBHOOK_SECRET to the endpoint secret.')

export default fromNodeMiddleware(
  emailWebhook(secret, {
    'email.bounced': async (event) => markBounced(event.data.id),
  }),
)
