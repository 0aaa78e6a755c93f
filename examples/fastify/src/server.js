// Starts the example: EMAIL_WEBHOOK_SECRET=... PORT=3000 node src/server.js
import { createApp } from './app.js'

const secret = process.env.EMAIL_WEBHOOK_SECRET
if (!secret) {
  console.error('Set EMAIL_WEBHOOK_SECRET to the endpoint secret shown when the webhook endpoint was created.')
  process.exit(1)
}
const app = await createApp({ secret, markBounced: (id) => console.log(`email ${id} bounced`) })
const url = await app.listen({ host: '127.0.0.1', port: Number(process.env.PORT ?? 3000) })
console.log(`listening on ${url}/hooks`)
