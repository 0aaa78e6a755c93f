/**
 * The same type contracts for a user whose project is not strict (`strict: false`, so no
 * `strictNullChecks`): checked by `tsc -p test/types/tsconfig.loose.json`, and left out of the
 * strict test config.
 */
import {
  createReceiver,
  type EmailEvent,
  type EmailEventOf,
  type EmailEventType,
  emailWebhook,
  isEmailEvent,
  type WebhookEvent,
} from '@email-webhooks/core'
import { expectTypeOf } from 'vitest'

declare const secret: string

createReceiver({
  secret,
  handlers: {
    'email.bounced': (event) => {
      expectTypeOf(event.type).toEqualTypeOf<'email.bounced'>()
      expectTypeOf(event.data.id).toEqualTypeOf<string>()
      expectTypeOf(event).toEqualTypeOf<EmailEventOf<'email.bounced'>>()
    },
    // @ts-expect-error a misspelt key fails to compile without strict mode too
    'email.bounce': () => {},
  },
})

emailWebhook(secret, {
  'email.complained': (event, ctx) => {
    expectTypeOf(event.type).toEqualTypeOf<'email.complained'>()
    expectTypeOf(event.data.id).toEqualTypeOf<string>()
    expectTypeOf(ctx.request).toEqualTypeOf<Request>()
  },
  // @ts-expect-error a misspelt key fails to compile without strict mode too
  'email.complaint': () => {},
})

declare const event: EmailEvent
if (event.type === 'email.deferred') {
  expectTypeOf(event).toEqualTypeOf<EmailEventOf<'email.deferred'>>()
  // @ts-expect-error narrowed: it is no longer a bounced event
  expectTypeOf(event.type).toEqualTypeOf<'email.bounced'>()
}
switch (event.type) {
  case 'email.bounced':
    expectTypeOf(event.type).toEqualTypeOf<'email.bounced'>()
    expectTypeOf(event.data.id).toEqualTypeOf<string>()
    break
  default:
    expectTypeOf(event.type).toEqualTypeOf<Exclude<EmailEventType, 'email.bounced'>>()
}

declare const incoming: WebhookEvent
expectTypeOf(incoming.type).toEqualTypeOf<string>()
if (isEmailEvent(incoming)) {
  expectTypeOf(incoming.data.id).toEqualTypeOf<string>()
  if (incoming.type === 'email.queued') expectTypeOf(incoming).toEqualTypeOf<EmailEventOf<'email.queued'>>()
}
