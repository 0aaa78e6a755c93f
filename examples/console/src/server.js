// Starts the example: EMAIL_WEBHOOK_SECRET=... CONSOLE_PASSWORD=... PORT=3000 node src/server.js
import { createApp } from './app.js'

const secret = process.env.EMAIL_WEBHOOK_SECRET
const consolePassword = process.env.CONSOLE_PASSWORD
if (!secret || !consolePassword) {
  console.error('Set EMAIL_WEBHOOK_SECRET (the endpoint secret) and CONSOLE_PASSWORD (12 characters or more: openssl rand -base64 18).')
  process.exit(1)
}
const { app } = createApp({
  secret,
  consolePassword,
  handlers: { 'email.bounced': (event) => console.log(`email ${event.data.id} bounced`) },
})
const port = Number(process.env.PORT ?? 3000)
app.listen(port, () =>
  console.log(`webhooks on http://localhost:${port}/hooks, console on http://localhost:${port}/webhooks-console/ (user ops)`),
)
