// Starts the example: EMAIL_WEBHOOK_SECRET=... PORT=3000 node src/server.js
import { createApp } from './app.js'

const secret = process.env.EMAIL_WEBHOOK_SECRET
if (!secret) {
  console.error('Set EMAIL_WEBHOOK_SECRET to the endpoint secret shown when the webhook endpoint was created.')
  process.exit(1)
}
const bounced = new Set()
const app = createApp({
  secret,
  actions: {
    markBounced: (id) => {
      bounced.add(id)
      console.log(`email ${id} bounced: marked`)
    },
    suppress: (id) => console.log(`suppressing future mail to the recipient of ${id}`),
    markDelivered: (id) => console.log(`email ${id} accepted by the destination server`),
  },
})
const port = Number(process.env.PORT ?? 3000)
app.listen(port, () => console.log(`listening on http://localhost:${port}/hooks`))
