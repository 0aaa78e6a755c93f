/**
 * Type contracts, checked by `tsc -p test/tsconfig.json`: handler keys are the email event
 * types only (a typo does not compile), each handler sees its own literal `type` and a string
 * `data.id`, `EmailEvent` narrows on `type`, and `WebhookEvent` takes any type.
 */
import {
  createReceiver,
  type EMAIL_EVENT_TYPES,
  type EmailEvent,
  type EmailEventOf,
  type EmailEventType,
  emailWebhook,
  type HandlerContext,
  isEmailEvent,
  isEmailEventType,
  type NearestEmailEventTypes,
  type UnknownHandlerKey,
  type WebhookEvent,
} from '@email-webhooks/core'
import { createEvent, eventFixtures, TEST_SECRET } from '@email-webhooks/core/testing'
import { expectTypeOf } from 'vitest'

const secret = TEST_SECRET

// A misspelt handler key does not compile, in createReceiver and in emailWebhook.
createReceiver({
  secret,
  handlers: {
    // @ts-expect-error 'email.bounce' is not an email event type (it is 'email.bounced')
    'email.bounce': () => {},
  },
})

emailWebhook(secret, {
  // @ts-expect-error 'email.bounce' is not an email event type (it is 'email.bounced')
  'email.bounce': () => {},
})

emailWebhook(secret, {
  // @ts-expect-error unknown types go to onUnknown, not to handlers
  'organization.updated': () => {},
})

// The compiler's message for a misspelt key says what it likely meant, as the runtime does.
expectTypeOf<
  UnknownHandlerKey<'email.bounce'>
>().toEqualTypeOf<"'email.bounce' is not an email event type. Did you mean 'email.bounced'?">()
expectTypeOf<NearestEmailEventTypes<'email.recipient_acepted'>>().toEqualTypeOf<'email.recipient_accepted'>()
expectTypeOf<NearestEmailEventTypes<'Bounced'>>().toEqualTypeOf<'email.bounced'>()
expectTypeOf<NearestEmailEventTypes<'email.recipient'>>().toEqualTypeOf<
  'email.recipient_accepted' | 'email.recipient_deferred' | 'email.recipient_resubmitted'
>()
expectTypeOf<NearestEmailEventTypes<'email.opened'>>().toBeNever()
emailWebhook(secret, {
  'email.queued': (event) => void event.data.id,
  // @ts-expect-error 'email.bounce' is not an email event type. Did you mean 'email.bounced'? (even beside a right key)
  'email.bounce': () => {},
})

// Inside each handler, `type` is the literal and `data.id` a string.
createReceiver({
  secret,
  handlers: {
    'email.bounced': (event, ctx) => {
      expectTypeOf(event.type).toEqualTypeOf<'email.bounced'>()
      expectTypeOf(event.data.id).toEqualTypeOf<string>()
      expectTypeOf(event.id).toEqualTypeOf<string>()
      expectTypeOf(event.created_at).toEqualTypeOf<string>()
      expectTypeOf(event).toEqualTypeOf<EmailEventOf<'email.bounced'>>()
      expectTypeOf(ctx.signal).toEqualTypeOf<AbortSignal>()
      expectTypeOf(ctx.attempt).toEqualTypeOf<number>()
      // @ts-expect-error a bounced event is not a complained one
      expectTypeOf(event.type).toEqualTypeOf<'email.complained'>()
    },
    'email.queued': async (event) => {
      expectTypeOf(event.type).toEqualTypeOf<'email.queued'>()
      expectTypeOf(event.data.id).toEqualTypeOf<string>()
    },
  },
  onUnknown: (event) => {
    expectTypeOf(event).toEqualTypeOf<WebhookEvent>()
    expectTypeOf(event.type).toEqualTypeOf<string>()
  },
})

emailWebhook(secret, {
  'email.complained': (event, ctx) => {
    expectTypeOf(event.type).toEqualTypeOf<'email.complained'>()
    expectTypeOf(event.data.id).toEqualTypeOf<string>()
    expectTypeOf(ctx.request).toEqualTypeOf<Request>()
    expectTypeOf(ctx).toExtend<HandlerContext>()
  },
  'email.recipient_accepted': (event) => {
    expectTypeOf(event.type).toEqualTypeOf<'email.recipient_accepted'>()
    expectTypeOf(event.data.id).toEqualTypeOf<string>()
  },
})

// A handler must take the event of its key, not another one.
createReceiver({
  secret,
  handlers: {
    // @ts-expect-error the handler for email.queued cannot require an email.bounced event
    'email.queued': (event: EmailEventOf<'email.bounced'>) => event,
  },
})

// EmailEvent narrows on `type`.
declare const anyEmailEvent: EmailEvent
if (anyEmailEvent.type === 'email.deferred') {
  expectTypeOf(anyEmailEvent).toEqualTypeOf<EmailEventOf<'email.deferred'>>()
}
switch (anyEmailEvent.type) {
  case 'email.rejected':
    expectTypeOf(anyEmailEvent.type).toEqualTypeOf<'email.rejected'>()
    break
  case 'email.bounced':
  case 'email.complained':
    expectTypeOf(anyEmailEvent.type).toEqualTypeOf<'email.bounced' | 'email.complained'>()
    break
}
expectTypeOf(anyEmailEvent.type).toEqualTypeOf<EmailEventType>()
expectTypeOf(anyEmailEvent.data.id).toEqualTypeOf<string>()
expectTypeOf<EmailEventType>().toEqualTypeOf<(typeof EMAIL_EVENT_TYPES)[number]>()
expectTypeOf<EmailEvent>().toExtend<WebhookEvent>()

// An unknown type is not an EmailEvent.
// @ts-expect-error 'email.opened' is not an email event type
const notEmail: EmailEvent = { id: 'e', type: 'email.opened', created_at: '', data: { id: 'm' } }
void notEmail

// WebhookEvent accepts any type, and unknown fields; type guards narrow it.
const unknownEvent: WebhookEvent = { id: 'e', type: 'organization.updated', created_at: '', data: {}, api_version: 'v1' }
expectTypeOf(unknownEvent.type).toEqualTypeOf<string>()
expectTypeOf(unknownEvent.data.id).toEqualTypeOf<unknown>()
if (isEmailEvent(unknownEvent)) {
  expectTypeOf(unknownEvent).toEqualTypeOf<EmailEvent>()
  expectTypeOf(unknownEvent.data.id).toEqualTypeOf<string>()
}
declare const someType: string
if (isEmailEventType(someType)) expectTypeOf(someType).toEqualTypeOf<EmailEventType>()

// Testing kit: fixtures are typed per type.
expectTypeOf(eventFixtures['email.bounced']).toEqualTypeOf<EmailEventOf<'email.bounced'>>()
expectTypeOf(createEvent('email.submitted')).toEqualTypeOf<EmailEventOf<'email.submitted'>>()
expectTypeOf(createEvent('organization.updated')).toEqualTypeOf<WebhookEvent>()

// createSignedDelivery: a delivery for an email type carries that type's envelope, so data.id is a string.
{
  const { createSignedDelivery } = await import('@email-webhooks/core/testing')
  const bounced = await createSignedDelivery({ type: 'email.bounced' })
  expectTypeOf(bounced.event.type).toEqualTypeOf<'email.bounced'>()
  expectTypeOf(bounced.event.data.id).toEqualTypeOf<string>()
  const queued = await createSignedDelivery()
  expectTypeOf(queued.event.data.id).toEqualTypeOf<string>()
  const again = await createSignedDelivery({ event: bounced.event, timestamp: 1 })
  expectTypeOf(again.event).toEqualTypeOf<EmailEventOf<'email.bounced'>>()
  const other = await createSignedDelivery({ type: 'organization.updated' })
  expectTypeOf(other.event).toEqualTypeOf<WebhookEvent>()
}

// skipStale takes only message-state types a newer event replaces; facts are a compile error.
{
  const { createReceiver, STALE_SKIPPABLE_TYPES } = await import('@email-webhooks/core')
  expectTypeOf<(typeof STALE_SKIPPABLE_TYPES)[number]>().toEqualTypeOf<
    'email.queued' | 'email.submitted' | 'email.deferred' | 'email.uncertain'
  >()
  createReceiver({ secret: 's', ordering: true, skipStale: ['email.deferred', 'email.queued'] })
  createReceiver({ secret: 's', ordering: true, skipStale: true })
  // @ts-expect-error a bounce is a fact no later event replaces
  createReceiver({ secret: 's', ordering: true, skipStale: ['email.bounced'] })
  // @ts-expect-error so is a complaint
  createReceiver({ secret: 's', ordering: true, skipStale: ['email.complained'] })
  // @ts-expect-error and every recipient event
  createReceiver({ secret: 's', ordering: true, skipStale: ['email.recipient_accepted'] })
}
