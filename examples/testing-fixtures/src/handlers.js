// The application code under test: handlers that a user wrote, mounted on Express and Hono.
import { emailWebhook as expressWebhook } from '@email-webhooks/express'
import { emailWebhook as honoWebhook } from '@email-webhooks/hono'
import express from 'express'
import { Hono } from 'hono'

/**
 * Handlers that keep a suppression list of email ids: a bounce or a complaint puts the email on it
 * (the sender does not promise a recipient in `data`, so the app maps an email id to the address it
 * sent to, from its own records of POST /emails).
 */
export function suppressionHandlers(suppressed) {
  return {
    'email.bounced': (event) => void suppressed.add(event.data.id),
    'email.complained': (event) => void suppressed.add(event.data.id),
  }
}

/** The Express app; `now` (ms since the epoch) is the clock for the timestamp window, `Date.now` if omitted. */
export function createExpressApp({ secret, store, suppressed, now }) {
  const app = express()
  app.post('/hooks', expressWebhook(secret, suppressionHandlers(suppressed), { store, now }))
  return app
}

/** The Hono app; `now` as for the Express app. */
export function createHonoApp({ secret, store, suppressed, now }) {
  const app = new Hono()
  app.post('/hooks', honoWebhook(secret, suppressionHandlers(suppressed), { store, now }))
  return app
}
