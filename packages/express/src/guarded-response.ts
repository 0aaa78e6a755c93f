/** `ctx.res` for handlers: Express's response, except that sending the answer throws (the middleware sends it after the event is recorded). */
import type { ServerResponse } from 'node:http'
import { sendGuard } from '@email-webhooks/core'
// Types only: the runtime never imports express.
import type { Response } from 'express'

/** Methods that would send an answer; a handler calling them would acknowledge before the event is recorded. */
const SENDING = new Set<PropertyKey>([
  'writeHead',
  'write',
  'end',
  'send',
  'json',
  'jsonp',
  'sendStatus',
  'sendFile',
  'download',
  'redirect',
  'render',
  'flushHeaders',
])

function refuseToSend(name: string): never {
  throw new TypeError(
    `[@email-webhooks/express] ctx.res.${name}() was called in a webhook handler. The middleware answers after the event is recorded as done (a 2xx sent earlier would be lost on a crash), so handlers cannot send. Return to acknowledge, throw to get a retry; use ctx.res.locals or headers only.`,
  )
}

const guard = sendGuard(SENDING, refuseToSend)

/** `res` for handlers: reads and header changes pass through; sending throws. */
export function guardedResponse(res: ServerResponse): Response {
  return guard(res) as unknown as Response
}
