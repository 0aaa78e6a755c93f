// Starts the example: EMAIL_WEBHOOK_SECRET=... PORT=3000 node src/server.js
import { createApp } from './app.js'

const secret = process.env.EMAIL_WEBHOOK_SECRET
if (!secret) {
  console.error('Set EMAIL_WEBHOOK_SECRET to the endpoint secret shown when the webhook endpoint was created.')
  process.exit(1)
}
const app = createApp({ secret, markBounced: (id) => console.log(`email ${id} bounced`) })
const server = app.listen(Number(process.env.PORT ?? 3000), '127.0.0.1', () =>
  console.log(`listening on http://127.0.0.1:${server.address().port}/hooks`),
)
