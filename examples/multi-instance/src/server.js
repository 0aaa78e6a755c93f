// One instance: EMAIL_WEBHOOK_SECRET=... DATABASE_URL=postgres://... PORT=3000 node src/server.js
// Start as many as you like with the same DATABASE_URL; each event is handled by one of them.
import { createApp } from './app.js'

const secret = process.env.EMAIL_WEBHOOK_SECRET
const databaseUrl = process.env.DATABASE_URL
if (!secret || !databaseUrl) {
  console.error('Set EMAIL_WEBHOOK_SECRET (the endpoint secret) and DATABASE_URL (postgres://user:password@host:5432/db).')
  process.exit(1)
}
const { app, store } = createApp({ secret, databaseUrl, markBounced: (id) => console.log(`email ${id} bounced`) })
const server = app.listen(Number(process.env.PORT ?? 3000), '127.0.0.1', () => {
  console.log(`listening on http://127.0.0.1:${server.address().port}/hooks`)
})
process.once('SIGTERM', () => server.close(() => store.close()))
