/**
 * Type contracts of the adapters' `emailWebhook(secret, handlers)`: a misspelt key does not
 * compile, and each handler sees its literal `type`, a string `data.id` and its framework context.
 */
import type { EmailEventOf } from '@email-webhooks/core'
import { emailWebhook as expressWebhook } from '@email-webhooks/express'
import { emailWebhook as honoWebhook } from '@email-webhooks/hono'
import type { Context } from 'hono'
import { expectTypeOf } from 'vitest'

declare const secret: string

expressWebhook(secret, {
  // @ts-expect-error 'email.bounce' is not an email event type (it is 'email.bounced')
  'email.bounce': () => {},
})

honoWebhook(secret, {
  // @ts-expect-error 'email.bounce' is not an email event type (it is 'email.bounced')
  'email.bounce': () => {},
})

expressWebhook(secret, {
  'email.bounced': async (event, ctx) => {
    expectTypeOf(event).toEqualTypeOf<EmailEventOf<'email.bounced'>>()
    expectTypeOf(event.type).toEqualTypeOf<'email.bounced'>()
    expectTypeOf(event.data.id).toEqualTypeOf<string>()
    expectTypeOf(ctx.signal).toEqualTypeOf<AbortSignal>()
    expectTypeOf(ctx.req.headers).not.toBeAny()
  },
})

honoWebhook(secret, {
  'email.complained': (event, ctx) => {
    expectTypeOf(event.type).toEqualTypeOf<'email.complained'>()
    expectTypeOf(event.data.id).toEqualTypeOf<string>()
    expectTypeOf(ctx.c).toExtend<Context>()
  },
})
