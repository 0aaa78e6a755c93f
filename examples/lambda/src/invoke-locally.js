// Invokes the function's handler on this machine, as Lambda would: a signed delivery in the event
// each HTTP source sends (an HTTP API or function URL, a REST API, an ALB), then the same delivery
// again, which the store answers as a duplicate. With a local store, e.g.:
// EMAIL_WEBHOOK_SECRET=whsec_try_it REDIS_URL=redis://127.0.0.1:6379 node src/invoke-locally.js
import { createLambdaContext, createLambdaEvent, createSignedDelivery } from '@email-webhooks/core/testing'
import { handler } from './handler.js'

const secret = process.env.EMAIL_WEBHOOK_SECRET ?? ''
for (const source of /** @type {const} */ (['http-api', 'rest', 'alb'])) {
  const delivery = await createSignedDelivery({ secret, type: 'email.bounced' })
  const first = await handler(createLambdaEvent(source, delivery), createLambdaContext())
  const again = await handler(createLambdaEvent(source, delivery), createLambdaContext())
  console.log(`${source}: ${first.statusCode} ${first.body}, again: ${again.statusCode} ${again.body}`)
}
await handler.store().close?.()
