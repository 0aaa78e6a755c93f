/**
 * AWS Lambda events for a delivery, to invoke a Lambda handler on your machine or in a test as each
 * HTTP source would: an HTTP API or a function URL (payload 2.0: header names lower-cased, repeats
 * joined with commas), a REST API (payload 1.0: names as sent, every value in `multiValueHeaders`)
 * and an Application Load Balancer (`headers`, or `multiValueHeaders` when its target group has them
 * on). The shapes are those of the AWS documentation's examples, ids made up; the types are
 * structural (assignable to `@types/aws-lambda`'s), so this module needs no AWS package. Bodies are
 * text, or base64 with `isBase64Encoded` when asked (a REST API with binary media types, ALB).
 */

/** The HTTP sources `createLambdaEvent` builds events of. */
export type LambdaEventSource = 'http-api' | 'rest' | 'alb'

/** What is delivered: the signed headers and the exact body (a `SignedDelivery` from `createSignedDelivery` is one). */
export interface LambdaDeliveryInput {
  headers: Record<string, string>
  body: string | Uint8Array
}

/** Options of {@link createLambdaEvent}. */
export interface CreateLambdaEventOptions {
  /** The request path; default `/hooks`. */
  path?: string
  /** Send the body in base64 with `isBase64Encoded: true` (a REST API whose binary media types include it; ALB for binary content); default false. */
  base64?: boolean
  /** ALB only: the target group has multi-value headers on (`multiValueHeaders` instead of `headers`); default false. */
  multiValueHeaders?: boolean
}

/** An API Gateway HTTP API (or function URL) event, payload 2.0. */
export interface LambdaHttpApiEvent {
  version: string
  routeKey: string
  rawPath: string
  rawQueryString: string
  headers: Record<string, string | undefined>
  requestContext: {
    accountId: string
    apiId: string
    domainName: string
    domainPrefix: string
    http: { method: string; path: string; protocol: string; sourceIp: string; userAgent: string }
    requestId: string
    routeKey: string
    stage: string
    time: string
    timeEpoch: number
  }
  body?: string
  isBase64Encoded: boolean
}

/** The identity of a REST API request (no caller is authenticated). */
interface RestIdentity {
  accessKey: string | null
  accountId: string | null
  apiKey: string | null
  apiKeyId: string | null
  caller: string | null
  clientCert: null
  cognitoAuthenticationProvider: string | null
  cognitoAuthenticationType: string | null
  cognitoIdentityId: string | null
  cognitoIdentityPoolId: string | null
  principalOrgId: string | null
  sourceIp: string
  user: string | null
  userAgent: string | null
  userArn: string | null
}

/** An API Gateway REST API event (Lambda proxy integration), payload 1.0. */
export interface LambdaRestEvent {
  resource: string
  path: string
  httpMethod: string
  headers: Record<string, string | undefined>
  multiValueHeaders: Record<string, string[] | undefined>
  queryStringParameters: null
  multiValueQueryStringParameters: null
  pathParameters: null
  stageVariables: null
  requestContext: {
    accountId: string
    apiId: string
    authorizer: Record<string, unknown>
    domainName: string
    domainPrefix: string
    extendedRequestId: string
    httpMethod: string
    identity: RestIdentity
    path: string
    protocol: string
    requestId: string
    requestTime: string
    requestTimeEpoch: number
    resourceId: string
    resourcePath: string
    stage: string
  }
  body: string | null
  isBase64Encoded: boolean
}

/** An Application Load Balancer event. */
export interface LambdaAlbEvent {
  requestContext: { elb: { targetGroupArn: string } }
  httpMethod: string
  path: string
  queryStringParameters?: Record<string, string | undefined>
  headers?: Record<string, string | undefined>
  multiValueQueryStringParameters?: Record<string, string[] | undefined>
  multiValueHeaders?: Record<string, string[] | undefined>
  body: string | null
  isBase64Encoded: boolean
}

/** A Lambda context as the Node.js runtime passes it (assignable to `@types/aws-lambda`'s `Context`). */
export interface LambdaTestContext {
  callbackWaitsForEmptyEventLoop: boolean
  functionName: string
  functionVersion: string
  invokedFunctionArn: string
  memoryLimitInMB: string
  awsRequestId: string
  logGroupName: string
  logStreamName: string
  getRemainingTimeInMillis(): number
  done(error?: Error, result?: unknown): void
  fail(error: Error | string): void
  succeed(messageOrObject: unknown, object?: unknown): void
}

const CLIENT = { ip: '203.0.113.10', agent: 'email-service-webhooks/1.0' }
const ACCOUNT = '123456789012'
const TRACE = 'Root=1-67f6a5f0-1a2b3c4d5e6f7a8b9c0d1e2f'

function base64(body: string | Uint8Array): string {
  const bytes = typeof body === 'string' ? new TextEncoder().encode(body) : body
  let binary = ''
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000))
  return btoa(binary)
}

const text = (body: string | Uint8Array): string => (typeof body === 'string' ? body : new TextDecoder().decode(body))

/** The request time as API Gateway writes it: `09/Apr/2026:12:34:56 +0000`. */
function requestTime(ms: number): string {
  const d = new Date(ms)
  const month = d.toLocaleString('en-US', { month: 'short', timeZone: 'UTC' })
  const pad = (n: number): string => String(n).padStart(2, '0')
  return `${pad(d.getUTCDate())}/${month}/${d.getUTCFullYear()}:${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())} +0000`
}

function httpApiEvent(delivery: LambdaDeliveryInput, path: string, encoded: boolean, now: number): LambdaHttpApiEvent {
  const domainName = 'abcdef1234.execute-api.us-east-1.amazonaws.com'
  const headers: Record<string, string | undefined> = {
    accept: '*/*',
    host: domainName,
    'user-agent': CLIENT.agent,
    'x-amzn-trace-id': TRACE,
    'x-forwarded-for': CLIENT.ip,
    'x-forwarded-port': '443',
    'x-forwarded-proto': 'https',
  }
  // Payload 2.0 lower-cases header names and joins a repeated header's values with commas.
  for (const [name, value] of Object.entries(delivery.headers)) {
    const key = name.toLowerCase()
    headers[key] = headers[key] === undefined ? value : `${headers[key]},${value}`
  }
  return {
    version: '2.0',
    routeKey: `POST ${path}`,
    rawPath: path,
    rawQueryString: '',
    headers,
    requestContext: {
      accountId: ACCOUNT,
      apiId: 'abcdef1234',
      domainName,
      domainPrefix: 'abcdef1234',
      http: { method: 'POST', path, protocol: 'HTTP/1.1', sourceIp: CLIENT.ip, userAgent: CLIENT.agent },
      requestId: crypto.randomUUID(),
      routeKey: `POST ${path}`,
      stage: '$default',
      time: requestTime(now),
      timeEpoch: now,
    },
    body: encoded ? base64(delivery.body) : text(delivery.body),
    isBase64Encoded: encoded,
  }
}

function restEvent(delivery: LambdaDeliveryInput, path: string, encoded: boolean, now: number): LambdaRestEvent {
  const domainName = 'abcdef1234.execute-api.us-east-1.amazonaws.com'
  const sent: Record<string, string> = {
    Accept: '*/*',
    Host: domainName,
    'User-Agent': CLIENT.agent,
    'X-Amzn-Trace-Id': TRACE,
    'X-Forwarded-For': CLIENT.ip,
    'X-Forwarded-Port': '443',
    'X-Forwarded-Proto': 'https',
  }
  const headers: Record<string, string | undefined> = { ...sent }
  const multiValueHeaders: Record<string, string[] | undefined> = Object.fromEntries(Object.entries(sent).map(([k, v]) => [k, [v]]))
  // Payload 1.0 keeps names as sent; `headers` has the last value, `multiValueHeaders` every one.
  for (const [name, value] of Object.entries(delivery.headers)) {
    headers[name] = value
    multiValueHeaders[name] = [...(multiValueHeaders[name] ?? []), value]
  }
  const identity: RestIdentity = {
    accessKey: null,
    accountId: null,
    apiKey: null,
    apiKeyId: null,
    caller: null,
    clientCert: null,
    cognitoAuthenticationProvider: null,
    cognitoAuthenticationType: null,
    cognitoIdentityId: null,
    cognitoIdentityPoolId: null,
    principalOrgId: null,
    sourceIp: CLIENT.ip,
    user: null,
    userAgent: CLIENT.agent,
    userArn: null,
  }
  return {
    resource: path,
    path,
    httpMethod: 'POST',
    headers,
    multiValueHeaders,
    queryStringParameters: null,
    multiValueQueryStringParameters: null,
    pathParameters: null,
    stageVariables: null,
    requestContext: {
      accountId: ACCOUNT,
      apiId: 'abcdef1234',
      authorizer: {},
      domainName,
      domainPrefix: 'abcdef1234',
      extendedRequestId: 'JGw6uF5xIAMFhMg=',
      httpMethod: 'POST',
      identity,
      path: `/prod${path}`,
      protocol: 'HTTP/1.1',
      requestId: crypto.randomUUID(),
      requestTime: requestTime(now),
      requestTimeEpoch: now,
      resourceId: 'wtw4ab',
      resourcePath: path,
      stage: 'prod',
    },
    body: encoded ? base64(delivery.body) : text(delivery.body),
    isBase64Encoded: encoded,
  }
}

function albEvent(delivery: LambdaDeliveryInput, path: string, encoded: boolean, multiValue: boolean): LambdaAlbEvent {
  const headers: Record<string, string> = {
    accept: '*/*',
    host: 'hooks-alb-123578498.us-east-1.elb.amazonaws.com',
    'user-agent': CLIENT.agent,
    'x-amzn-trace-id': TRACE,
    'x-forwarded-for': CLIENT.ip,
    'x-forwarded-port': '443',
    'x-forwarded-proto': 'https',
  }
  const base = {
    requestContext: { elb: { targetGroupArn: `arn:aws:elasticloadbalancing:us-east-1:${ACCOUNT}:targetgroup/hooks/49e9d65c45c6791a` } },
    httpMethod: 'POST',
    path,
    body: encoded ? base64(delivery.body) : text(delivery.body),
    isBase64Encoded: encoded,
  }
  if (!multiValue) {
    for (const [name, value] of Object.entries(delivery.headers)) headers[name.toLowerCase()] = value
    return { ...base, queryStringParameters: {}, headers }
  }
  const multiValueHeaders: Record<string, string[] | undefined> = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, [v]]))
  for (const [name, value] of Object.entries(delivery.headers)) {
    const key = name.toLowerCase()
    multiValueHeaders[key] = [...(multiValueHeaders[key] ?? []), value]
  }
  return { ...base, multiValueQueryStringParameters: {}, multiValueHeaders }
}

/**
 * The event an HTTP source hands a Lambda function for a POST of this delivery, to invoke a handler
 * (`@email-webhooks/lambda`'s, or your own) without deploying it.
 *
 * @param source `'http-api'` (an HTTP API or a function URL, payload 2.0), `'rest'` (a REST API, payload 1.0) or `'alb'`.
 * @param delivery The signed headers and the exact body, e.g. from `createSignedDelivery`.
 * @param options.path The request path; default `/hooks`.
 * @param options.base64 The body in base64 with `isBase64Encoded`; default false.
 * @param options.multiValueHeaders ALB with multi-value headers on; default false.
 * @throws {TypeError} when `source` is not one of the three.
 * @example
 * const delivery = await createSignedDelivery({ type: 'email.bounced' })
 * const result = await handler(createLambdaEvent('http-api', delivery), createLambdaContext())
 */
export function createLambdaEvent(source: 'http-api', delivery: LambdaDeliveryInput, options?: CreateLambdaEventOptions): LambdaHttpApiEvent
export function createLambdaEvent(source: 'rest', delivery: LambdaDeliveryInput, options?: CreateLambdaEventOptions): LambdaRestEvent
export function createLambdaEvent(source: 'alb', delivery: LambdaDeliveryInput, options?: CreateLambdaEventOptions): LambdaAlbEvent
export function createLambdaEvent(
  source: LambdaEventSource,
  delivery: LambdaDeliveryInput,
  options?: CreateLambdaEventOptions,
): LambdaHttpApiEvent | LambdaRestEvent | LambdaAlbEvent
export function createLambdaEvent(
  source: LambdaEventSource,
  delivery: LambdaDeliveryInput,
  options: CreateLambdaEventOptions = {},
): LambdaHttpApiEvent | LambdaRestEvent | LambdaAlbEvent {
  const path = options.path ?? '/hooks'
  const encoded = options.base64 === true
  if (source === 'http-api') return httpApiEvent(delivery, path, encoded, Date.now())
  if (source === 'rest') return restEvent(delivery, path, encoded, Date.now())
  if (source === 'alb') return albEvent(delivery, path, encoded, options.multiValueHeaders === true)
  throw new TypeError(
    `[@email-webhooks/core/testing] createLambdaEvent's source must be 'http-api', 'rest' or 'alb', got ${JSON.stringify(source)}.`,
  )
}

/**
 * A Lambda context for one invocation, with `remainingMs` left (the handler caps its claims' lease there).
 * @param remainingMs Time left in the invocation; default 10 000 ms.
 * @example
 * await handler(createLambdaEvent('rest', delivery), createLambdaContext(3_000))
 */
export function createLambdaContext(remainingMs = 10_000): LambdaTestContext {
  const deadline = Date.now() + remainingMs
  return {
    callbackWaitsForEmptyEventLoop: true,
    functionName: 'email-webhooks',
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:us-east-1:${ACCOUNT}:function:email-webhooks`,
    memoryLimitInMB: '512',
    awsRequestId: crypto.randomUUID(),
    logGroupName: '/aws/lambda/email-webhooks',
    logStreamName: '2026/04/09/[$LATEST]0123456789abcdef0123456789abcdef',
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done: () => {},
    fail: () => {},
    succeed: () => {},
  }
}
