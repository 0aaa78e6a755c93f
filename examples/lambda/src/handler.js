// The function's handler, for API Gateway (REST or HTTP API), a function URL or ALB in front of it.
import { emailWebhook } from '@email-webhooks/lambda'
import { createStore } from './store.js'

const secret = process.env.EMAIL_WEBHOOK_SECRET
if (!secret) throw new Error('Set EMAIL_WEBHOOK_SECRET to the endpoint secret.')

export const handler = emailWebhook(
  secret,
  { 'email.bounced': async (event) => console.log(`email ${event.data.id} bounced`) },
  { store: createStore(process.env) },
)
