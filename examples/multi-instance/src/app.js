// An Express app for many instances behind a load balancer: every instance uses the same
// PostgreSQL dedup store, so a copy of an event that lands on another instance is a duplicate.
import { PostgresDedupStore } from '@email-webhooks/core/postgres'
import { emailWebhook } from '@email-webhooks/express'
import express from 'express'

/**
 * @param {object} options
 * @param {string | string[]} options.secret the endpoint secret(s)
 * @param {string} options.databaseUrl postgres://user:password@host:5432/db, the same for every instance
 * @param {(emailId: string) => Promise<void> | void} options.markBounced what to do when an email bounced
 */
export function createApp({ secret, databaseUrl, markBounced }) {
  // Creates its table on first use; see postgresDedupTableSql() to migrate by hand instead.
  const store = new PostgresDedupStore({ connectionString: databaseUrl })
  const app = express()
  app.post('/hooks', emailWebhook(secret, { 'email.bounced': async (event) => markBounced(event.data.id) }, { store }))
  app.get('/health', (_req, res) => res.json({ ok: true }))
  return { app, store }
}
