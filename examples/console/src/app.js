// An Express app that receives the email service's webhooks on POST /hooks in inbox mode (2xx once
// recorded, handlers after the answer) and serves the operator's console on /webhooks-console:
// find any event, an email's story, dead letters to retry. The console needs a password, and it
// may retry and purge dead letters only because `actions: true` says so.
import { emailWebhook, emailWebhookConsole } from '@email-webhooks/express'
import express from 'express'

/**
 * @param {object} options
 * @param {string} options.secret the endpoint secret
 * @param {string} options.consolePassword the console's basic-auth password (user `ops`), at least 12 characters
 * @param {import('@email-webhooks/express').ExpressEventHandlers} options.handlers what the app does with events
 * @param {import('@email-webhooks/core').DedupStore} [options.store] default: the SQLite file at EMAIL_WEBHOOKS_DB (or ./.email-webhooks/dedup.db)
 * @param {import('@email-webhooks/core').InboxOptions} [options.inbox] the inbox worker's settings
 */
export function createApp({ secret, consolePassword, handlers, store, inbox }) {
  const app = express()
  const webhook = emailWebhook(secret, handlers, { store, mode: 'inbox', ordering: true, inbox })
  app.post('/hooks', webhook)
  app.use(
    '/webhooks-console',
    emailWebhookConsole({ receiver: webhook, auth: { username: 'ops', password: consolePassword }, actions: true }),
  )
  return { app, webhook }
}
