// Starts the example on Node: EMAIL_WEBHOOK_SECRET=... PORT=3000 node src/server.js
import { serve } from '@hono/node-server'
import { createApp } from './app.js'

const secret = process.env.EMAIL_WEBHOOK_SECRET
if (!secret) {
  console.error('Set EMAIL_WEBHOOK_SECRET to the endpoint secret shown when the webhook endpoint was created.')
  process.exit(1)
}
const app = createApp({ secret, markBounced: (id) => console.log(`email ${id} bounced`) })
serve({ fetch: app.fetch, port: Number(process.env.PORT ?? 3000) }, (info) =>
  console.log(`listening on http://localhost:${info.port}/hooks`),
)
