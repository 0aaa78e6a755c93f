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

// Express: ctx.req and ctx.res are Express's own Request and Response (from @types/express), so
// Express-only members compile under strict: req.ip, req.params, res.locals.
expressWebhook(secret, {
  'email.queued': (_event, ctx) => {
    expectTypeOf(ctx.req).toEqualTypeOf<import('express').Request>()
    expectTypeOf(ctx.res).toEqualTypeOf<import('express').Response>()
    expectTypeOf(ctx.req.ip).toEqualTypeOf<string | undefined>()
    expectTypeOf(ctx.req.params).not.toBeAny()
    expectTypeOf(ctx.res.locals).toExtend<Record<string, unknown>>()
  },
})

// The middleware mounts on Express 5 and on Express 4 (typed through the express4 alias) and carries stats().
{
  const app5 = (await import('express')).default()
  const app4 = (await import('express4')).default()
  const middleware = expressWebhook(secret, {})
  app5.post('/hooks', middleware)
  app4.post('/hooks', middleware)
  expectTypeOf(middleware.stats().rejected).toEqualTypeOf<Record<string, number>>()
}

// Hono: the handler mounts on a route and carries stats().
{
  const { Hono } = await import('hono')
  const handler = honoWebhook(secret, {})
  new Hono().post('/hooks', handler)
  expectTypeOf(handler.stats().handled).toEqualTypeOf<number>()
}
