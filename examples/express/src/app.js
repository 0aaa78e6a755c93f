// An Express app that receives the email service's webhooks on POST /hooks.
// The dedup store is the default: a SQLite file at EMAIL_WEBHOOKS_DB (or ./.email-webhooks/dedup.db).
// Ordering is on: an email's events are handled one at a time, each knows whether a newer one was
// handled first (ctx.order), and `email-webhooks emails reconcile` can bring missed events here.
import { emailWebhook } from '@email-webhooks/express'
import express from 'express'

/**
 * @param {object} options
 * @param {string | string[]} options.secret the endpoint secret(s)
 * @param {{ markBounced(emailId: string): Promise<void> | void, suppress(emailId: string): Promise<void> | void, markDelivered(emailId: string): Promise<void> | void }} options.actions what the app does with events
 * @param {(type: string) => void} [options.onUnknown] called for event types this version does not know
 */
export function createApp({ secret, actions, onUnknown = () => {}, logger }) {
  const app = express()

  // The webhook route comes before express.json(): it needs the raw bytes to check the signature.
  app.post(
    '/hooks',
    emailWebhook(
      secret,
      {
        'email.bounced': async (event) => actions.markBounced(event.data.id),
        'email.complained': async (event) => actions.suppress(event.data.id),
        'email.recipient_accepted': async (event) => actions.markDelivered(event.data.id),
      },
      { ordering: true, onUnknown: (event) => onUnknown(event.type), ...(logger ? { logger } : {}) },
    ),
  )

  app.use(express.json())
  app.get('/health', (_req, res) => res.json({ ok: true }))
  return app
}
