// The Hono adapter in workerd: a Hono app whose /hooks route is @email-webhooks/hono's handler,
// with the D1 store of @email-webhooks/cloudflare on the `DB` binding.
import { D1DedupStore } from '@email-webhooks/cloudflare'
import { emailWebhook } from '@email-webhooks/hono'
import { Hono } from 'hono'

const app = new Hono()
let webhook

app.post('/hooks', (c, next) => {
  webhook ??= emailWebhook(
    c.env.EMAIL_WEBHOOK_SECRET,
    { 'email.bounced': async (event) => console.log(`email ${event.data.id} bounced`) },
    { store: new D1DedupStore(c.env.DB) },
  )
  return webhook(c, next)
})

export default app
