// The receiver with telemetry: EMAIL_WEBHOOK_SECRET=... PORT=3000 node --import ./src/telemetry.js src/server.js
import { emailWebhook } from '@email-webhooks/hono'
import { serve } from '@hono/node-server'
import { Hono } from 'hono'

const secret = process.env.EMAIL_WEBHOOK_SECRET
if (!secret) {
  console.error('Set EMAIL_WEBHOOK_SECRET to the endpoint secret shown when the webhook endpoint was created.')
  process.exit(1)
}

const app = new Hono()
app.post(
  '/hooks',
  emailWebhook(secret, {
    'email.bounced': async (event) => {
      // Stands in for the app's own work; a failing database shows up as a handler error span.
      if (event.data.id.startsWith('fail-')) throw new Error('the recipients table is locked')
      console.log(`email ${event.data.id} bounced`)
    },
  }),
)
serve({ fetch: app.fetch, port: Number(process.env.PORT ?? 3000), hostname: process.env.HOST ?? '0.0.0.0' }, (info) =>
  console.log(`listening on http://localhost:${info.port}/hooks`),
)
