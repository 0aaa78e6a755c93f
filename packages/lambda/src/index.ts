/**
 * @email-webhooks/lambda: `export const handler = emailWebhook(secret, handlers, { store })`, an AWS
 * Lambda handler for API Gateway REST (payload 1.0) and HTTP API (2.0) events, function URLs and
 * ALB. The adapter takes the body as the event carries it (base64-decoded when `isBase64Encoded`,
 * refused before decoding when over `maxBodyBytes`), hands it with the headers to core's receiver,
 * and returns the answer in the shape the event's source expects. It starts no timer. The claim's
 * lease ends with the invocation (`context.getRemainingTimeInMillis()`), so an event whose
 * invocation timed out is free for the sender's retry when the invocation ends.
 */
import { STATUS_CODES } from 'node:http'
import {
  assertValidSecrets,
  bodyTooLargeError,
  type CheckedEmailEventHandlers,
  createReceiver,
  DedupStoreError,
  type EmailEventHandlers,
  type EmailEventType,
  type HandlerContext,
  MemoryDedupStore,
  type Receiver,
  type ReceiverResponse,
  type WebhookOptions,
  type WebhookSecret,
} from '@email-webhooks/core'
import type { ALBEvent, APIGatewayProxyEvent, APIGatewayProxyEventV2, Context } from 'aws-lambda'

/** The HTTP events the handler answers: API Gateway REST (1.0) and HTTP API (2.0), function URLs (2.0) and ALB. */
export type LambdaHttpEvent = APIGatewayProxyEvent | APIGatewayProxyEventV2 | ALBEvent

/** The answer, valid for every source: API Gateway (1.0 and 2.0), function URLs and ALB. */
export interface LambdaHttpResult {
  statusCode: number
  /** ALB only: `"200 OK"`. */
  statusDescription?: string
  headers?: Record<string, string>
  /** Instead of `headers` when the ALB target group has multi-value headers on. */
  multiValueHeaders?: Record<string, string[]>
  body: string
  isBase64Encoded: false
}

/** The invocation, added to every handler's context as `lambda`. */
export interface LambdaHandlerContext {
  lambda: { event: LambdaHttpEvent; context: Context }
}

/** Handler context inside Lambda: core's context plus `lambda`. */
export type LambdaContext = HandlerContext & LambdaHandlerContext

/** Options of the Lambda `emailWebhook`: core's `WebhookOptions`, with `store` required (the AWS Lambda page of the docs says why). */
export type LambdaWebhookOptions = WebhookOptions<LambdaContext> & {
  /**
   * A `DedupStore` that outlives the function (`DynamoDBDedupStore`, PostgreSQL, Redis), or
   * `'memory'` to accept non-durable dedup. Its lease is capped at the invocation's remaining time.
   */
  store: NonNullable<WebhookOptions['store']>
}

/** Handlers keyed by email event type, with the Lambda context. */
export type LambdaEventHandlers = EmailEventHandlers<LambdaContext>

/** The Lambda handler, with the receiver's counters. */
export type EmailWebhookLambdaHandler = ((event: LambdaHttpEvent, context: Context) => Promise<LambdaHttpResult>) &
  Pick<Receiver, 'stats' | 'store' | 'inbox'>

const PACKAGE = '[@email-webhooks/lambda]'
const STORES =
  'DynamoDBDedupStore (@email-webhooks/core/dynamodb), PostgresDedupStore (@email-webhooks/core/postgres) or RedisDedupStore (@email-webhooks/core/redis), or your own DedupStore'
const NO_STORE = `${PACKAGE} options.store is required on Lambda: a SQLite file in /tmp or a memory store dies with the execution environment and is not shared by concurrent ones, so retried events would run their handlers again. Pass a store that outlives the function: ${STORES}; or store: 'memory' to accept non-durable dedup (tests, local runs).`
const MEMORY = `${PACKAGE} the dedup store is memory: it dies with this execution environment and concurrent environments do not share it, so retried events can run their handlers again. Pass ${STORES}.`
const NOT_POST = {
  status: 405,
  headers: { 'content-type': 'application/json', allow: 'POST' },
  body: JSON.stringify({ error: { code: 'method_not_allowed', message: 'Webhook deliveries are POST requests.' } }),
}

let warned = false

/** The event's method; throws for an event that is not one of the HTTP shapes. */
function methodOf(event: LambdaHttpEvent): string {
  const method = 'httpMethod' in event ? event.httpMethod : (event as APIGatewayProxyEventV2).requestContext?.http?.method
  if (typeof method === 'string') return method
  throw new TypeError(
    `${PACKAGE} the event is not an HTTP request from API Gateway (REST or HTTP API), a function URL or ALB: it has no httpMethod or requestContext.http.method. Point only such a trigger at this handler.`,
  )
}

/** The answer in the shape of the event's source: ALB wants a status line, and multiValueHeaders exactly when it sent them. */
function result(
  event: LambdaHttpEvent,
  { status, headers, body }: Pick<ReceiverResponse, 'status' | 'headers' | 'body'>,
): LambdaHttpResult {
  const base = { statusCode: status, body, isBase64Encoded: false as const }
  if (!('elb' in (event.requestContext ?? {}))) return { ...base, headers }
  const statusDescription = `${status} ${STATUS_CODES[status] ?? ''}`.trim()
  if (!(event as ALBEvent).multiValueHeaders) return { ...base, statusDescription, headers }
  return { ...base, statusDescription, multiValueHeaders: Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, [v]])) }
}

/** Payload 1.0 and ALB keep every value of a repeated header in multiValueHeaders (so a repeat is refused); 2.0 joins them. */
function headersOf(event: LambdaHttpEvent): Record<string, string | string[] | undefined> {
  const multi = (event as { multiValueHeaders?: Record<string, string[] | undefined> | null }).multiValueHeaders
  if (multi) for (const _ in multi) return multi
  return event.headers ?? {}
}

/**
 * Receives email webhooks as an AWS Lambda handler.
 *
 * @param secret The endpoint secret, or several during rotation.
 * @param handlers Handlers keyed by email event type; each gets `(event, ctx)` with `ctx.lambda` (`event`, `context`), `ctx.signal`.
 * @param options Core's `WebhookOptions`; `store` is required (`'memory'` is accepted with a warning).
 * @returns `(event, context) => Promise<result>`, with `stats()`.
 * @throws {DedupStoreError} `misconfigured` when no store is given.
 * @throws {TypeError} when the secret or an option is invalid (at cold start, not per request).
 * @example
 * export const handler = emailWebhook(process.env.EMAIL_WEBHOOK_SECRET ?? '', { 'email.bounced': (e) => markBounced(e.data.id) }, { store })
 */
export function emailWebhook<K extends string = EmailEventType>(
  secret: WebhookSecret,
  handlers: CheckedEmailEventHandlers<K, LambdaContext>,
  options: LambdaWebhookOptions,
): EmailWebhookLambdaHandler {
  assertValidSecrets(secret)
  if (options?.store === undefined) throw new DedupStoreError('misconfigured', NO_STORE)
  const receiver = createReceiver<LambdaHandlerContext>({ ...options, secret, handlers })
  if (!warned && receiver.store() instanceof MemoryDedupStore && options.logger !== false) {
    warned = true
    ;(options.logger ?? console).warn(MEMORY)
  }
  const { maxBodyBytes } = receiver
  async function emailWebhookLambdaHandler(event: LambdaHttpEvent, context: Context): Promise<LambdaHttpResult> {
    if (methodOf(event) !== 'POST') return result(event, NOT_POST)
    const text = event.body ?? ''
    // Base64 of n bytes is 4·⌈n/3⌉ characters: past that, refuse without decoding.
    if (event.isBase64Encoded && text.length > 4 * Math.ceil(maxBodyBytes / 3))
      return result(event, receiver.refuse(bodyTooLargeError(maxBodyBytes)))
    const body = event.isBase64Encoded ? Buffer.from(text, 'base64') : text
    // The lease ends with the invocation: a claim left by a timed-out invocation is free when it ends.
    const leaseCapMs = typeof context?.getRemainingTimeInMillis === 'function' ? context.getRemainingTimeInMillis() : undefined
    return result(event, await receiver.receive({ headers: headersOf(event), body, context: { lambda: { event, context } }, leaseCapMs }))
  }
  return Object.assign(emailWebhookLambdaHandler, { stats: receiver.stats, store: receiver.store, inbox: receiver.inbox })
}
