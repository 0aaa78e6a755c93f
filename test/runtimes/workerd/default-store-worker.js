// A Worker with no `store` option: workerd must get the memory default store (with one warning)
// and the Web Crypto backend. GET reports what happened; POST is the webhook.
import { cryptoBackendName, emailWebhook } from '@email-webhooks/core'

const warnings = []
const warn = console.warn
console.warn = (...args) => {
  warnings.push(args.map(String).join(' '))
  warn(...args)
}

let handled = 0
let handle

export default {
  async fetch(request, env) {
    if (request.method === 'GET') return Response.json({ backend: cryptoBackendName(), handled, warnings })
    handle ??= emailWebhook(env.EMAIL_WEBHOOK_SECRET, {
      'email.bounced': () => {
        handled++
      },
    })
    return handle(request)
  },
}
