/**
 * Type contracts of the adapters' `emailWebhook(secret, handlers)`: a misspelt key does not
 * compile, and each handler sees its literal `type`, a string `data.id` and its framework context.
 */
import type { EmailEventOf } from '@email-webhooks/core'
import { createLambdaContext, createLambdaEvent, type SignedDelivery } from '@email-webhooks/core/testing'
import { emailWebhook as expressWebhook } from '@email-webhooks/express'
import { emailWebhook as fastifyWebhook } from '@email-webhooks/fastify'
import { emailWebhook as honoWebhook } from '@email-webhooks/hono'
import { emailWebhook as koaWebhook } from '@email-webhooks/koa'
import { emailWebhook as lambdaWebhook } from '@email-webhooks/lambda'
import type {
  ALBEvent,
  ALBHandler,
  APIGatewayProxyEvent,
  APIGatewayProxyEventV2,
  APIGatewayProxyHandler,
  APIGatewayProxyHandlerV2,
  APIGatewayProxyHandlerV2WithJWTAuthorizer,
  Context as LambdaContext,
  LambdaFunctionURLHandler,
} from 'aws-lambda'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Context } from 'hono'
import type { ParameterizedContext } from 'koa'
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

// Fastify: a plugin registered with its options; handlers typed the same, with ctx.request and ctx.reply.
{
  const app = (await import('fastify')).default()
  await app.register(fastifyWebhook, {
    path: '/hooks',
    secret,
    prefix: '/v1',
    handlers: {
      'email.bounced': (event, ctx) => {
        expectTypeOf(event.type).toEqualTypeOf<'email.bounced'>()
        expectTypeOf(event.data.id).toEqualTypeOf<string>()
        expectTypeOf(ctx.request).toEqualTypeOf<FastifyRequest>()
        expectTypeOf(ctx.reply).toEqualTypeOf<FastifyReply>()
        expectTypeOf(ctx.request.ip).toEqualTypeOf<string>()
      },
      // @ts-expect-error 'email.bounce' is not an email event type (it is 'email.bounced')
      'email.bounce': () => {},
    },
    onUnknown: (event, ctx) => {
      expectTypeOf(event.type).toEqualTypeOf<string>()
      expectTypeOf(ctx.request).toEqualTypeOf<FastifyRequest>()
    },
  })
  // @ts-expect-error path is required
  await app.register(fastifyWebhook, { secret })
}

// Koa: middleware for @koa/router, generic over the app's state; handlers get ctx.koa.
{
  const Router = (await import('@koa/router')).default
  const router = new Router<{ user: string }>()
  router.post(
    '/hooks',
    koaWebhook<{ user: string }>(secret, {
      'email.complained': (event, ctx) => {
        expectTypeOf(event.type).toEqualTypeOf<'email.complained'>()
        expectTypeOf(event.data.id).toEqualTypeOf<string>()
        expectTypeOf(ctx.koa).toExtend<ParameterizedContext<{ user: string }>>()
        expectTypeOf(ctx.koa.state.user).toEqualTypeOf<string>()
      },
    }),
  )
  const Koa = (await import('koa')).default
  const middleware = koaWebhook(secret, {})
  new Koa().use(middleware)
  expectTypeOf(middleware.stats().handled).toEqualTypeOf<number>()
  koaWebhook(secret, {
    // @ts-expect-error 'email.bounce' is not an email event type (it is 'email.bounced')
    'email.bounce': () => {},
  })
}

// Lambda: a store is required; the handler is a Handler for every HTTP source @types/aws-lambda names.
{
  const handler = lambdaWebhook(
    secret,
    {
      'email.rejected': (event, ctx) => {
        expectTypeOf(event.type).toEqualTypeOf<'email.rejected'>()
        expectTypeOf(event.data.id).toEqualTypeOf<string>()
        expectTypeOf(ctx.lambda.context).toEqualTypeOf<LambdaContext>()
        expectTypeOf(ctx.signal).toEqualTypeOf<AbortSignal>()
      },
    },
    { store: 'memory' },
  )
  const rest: APIGatewayProxyHandler = handler
  const httpApi: APIGatewayProxyHandlerV2 = handler
  const jwt: APIGatewayProxyHandlerV2WithJWTAuthorizer = handler
  const functionUrl: LambdaFunctionURLHandler = handler
  const alb: ALBHandler = handler
  void [rest, httpApi, jwt, functionUrl, alb]
  // The testing kit's events are the shapes @types/aws-lambda names, and the handler takes them with its context.
  const delivery = {} as SignedDelivery
  expectTypeOf(createLambdaEvent('http-api', delivery)).toExtend<APIGatewayProxyEventV2>()
  expectTypeOf(createLambdaEvent('rest', delivery)).toExtend<APIGatewayProxyEvent>()
  expectTypeOf(createLambdaEvent('alb', delivery, { multiValueHeaders: true })).toExtend<ALBEvent>()
  expectTypeOf(createLambdaContext()).toExtend<LambdaContext>()
  void handler(createLambdaEvent('rest', delivery), createLambdaContext())
  // @ts-expect-error an SQS trigger is not an HTTP source
  createLambdaEvent('sqs', delivery)
  // @ts-expect-error store is required on Lambda (see the AWS Lambda page of the docs)
  lambdaWebhook(secret, {}, {})
  lambdaWebhook(
    secret,
    {
      // @ts-expect-error 'email.bounce' is not an email event type (it is 'email.bounced')
      'email.bounce': () => {},
    },
    { store: 'memory' },
  )
}
