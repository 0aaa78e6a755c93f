import { emailWebhook } from '@email-webhooks/core'
import { D1DedupStore } from './d1-store.js'

let handle

export default {
  async fetch(request, env) {
    handle ??= emailWebhook(
      env.EMAIL_WEBHOOK_SECRET,
      { 'email.bounced': async (event) => console.log(`email ${event.data.id} bounced`) },
      { store: new D1DedupStore(env.DB) },
    )
    return handle(request)
  },
}
