/**
 * Recorded shapes of the HTTP events Lambda receives (from the AWS documentation's examples, ids
 * replaced): API Gateway REST (payload 1.0), HTTP API (2.0), a function URL (2.0) and ALB with and
 * without multi-value headers. `lambdaEvent` puts a delivery's headers and body into one of them,
 * the way each source does: REST keeps header names as sent and lists every value in
 * `multiValueHeaders`; 2.0 lower-cases names and joins repeats with commas; ALB sends either
 * `headers` or `multiValueHeaders`, as its target group says. Text bodies arrive as strings; a REST
 * API with binary media type `*\/*` (and ALB, for binary content) sends base64.
 */
import type { ALBEvent, APIGatewayProxyEvent, APIGatewayProxyEventV2, Context } from 'aws-lambda'

export type LambdaSource = 'rest' | 'rest-binary' | 'http-api' | 'function-url' | 'alb' | 'alb-multi-value'

const TIME = { requestTime: '09/Apr/2026:12:34:56 +0000', requestTimeEpoch: 1775738096000 }

function restEvent(): APIGatewayProxyEvent {
  return {
    resource: '/hooks',
    path: '/hooks',
    httpMethod: 'POST',
    headers: {
      Accept: '*/*',
      'CloudFront-Forwarded-Proto': 'https',
      Host: 'abcdef1234.execute-api.us-east-1.amazonaws.com',
      'User-Agent': 'email-service-webhooks/1.0',
      'X-Amzn-Trace-Id': 'Root=1-67f6a5f0-1a2b3c4d5e6f7a8b9c0d1e2f',
      'X-Forwarded-For': '203.0.113.10',
      'X-Forwarded-Port': '443',
      'X-Forwarded-Proto': 'https',
    },
    multiValueHeaders: {
      Accept: ['*/*'],
      'CloudFront-Forwarded-Proto': ['https'],
      Host: ['abcdef1234.execute-api.us-east-1.amazonaws.com'],
      'User-Agent': ['email-service-webhooks/1.0'],
      'X-Amzn-Trace-Id': ['Root=1-67f6a5f0-1a2b3c4d5e6f7a8b9c0d1e2f'],
      'X-Forwarded-For': ['203.0.113.10'],
      'X-Forwarded-Port': ['443'],
      'X-Forwarded-Proto': ['https'],
    },
    queryStringParameters: null,
    multiValueQueryStringParameters: null,
    pathParameters: null,
    stageVariables: null,
    requestContext: {
      accountId: '123456789012',
      apiId: 'abcdef1234',
      authorizer: {},
      domainName: 'abcdef1234.execute-api.us-east-1.amazonaws.com',
      domainPrefix: 'abcdef1234',
      extendedRequestId: 'JGw6uF5xIAMFhMg=',
      httpMethod: 'POST',
      identity: {
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
        sourceIp: '203.0.113.10',
        user: null,
        userAgent: 'email-service-webhooks/1.0',
        userArn: null,
      },
      path: '/prod/hooks',
      protocol: 'HTTP/1.1',
      requestId: 'c6af9ac6-7b61-11e6-9a41-93e8deadbeef',
      ...TIME,
      resourceId: 'wtw4ab',
      resourcePath: '/hooks',
      stage: 'prod',
    },
    body: null,
    isBase64Encoded: false,
  }
}

function v2Event(domainName: string, routeKey: string): APIGatewayProxyEventV2 {
  return {
    version: '2.0',
    routeKey,
    rawPath: '/hooks',
    rawQueryString: '',
    headers: {
      accept: '*/*',
      host: domainName,
      'user-agent': 'email-service-webhooks/1.0',
      'x-amzn-trace-id': 'Root=1-67f6a5f0-1a2b3c4d5e6f7a8b9c0d1e2f',
      'x-forwarded-for': '203.0.113.10',
      'x-forwarded-port': '443',
      'x-forwarded-proto': 'https',
    },
    requestContext: {
      accountId: '123456789012',
      apiId: domainName.split('.')[0] as string,
      domainName,
      domainPrefix: domainName.split('.')[0] as string,
      http: { method: 'POST', path: '/hooks', protocol: 'HTTP/1.1', sourceIp: '203.0.113.10', userAgent: 'email-service-webhooks/1.0' },
      requestId: 'JGw6uF5xIAMEJ7Q=',
      routeKey,
      stage: '$default',
      time: TIME.requestTime,
      timeEpoch: TIME.requestTimeEpoch,
    },
    isBase64Encoded: false,
  }
}

function albEvent(multiValue: boolean): ALBEvent {
  const headers = {
    accept: '*/*',
    host: 'hooks-alb-123578498.us-east-1.elb.amazonaws.com',
    'user-agent': 'email-service-webhooks/1.0',
    'x-amzn-trace-id': 'Root=1-67f6a5f0-1a2b3c4d5e6f7a8b9c0d1e2f',
    'x-forwarded-for': '203.0.113.10',
    'x-forwarded-port': '443',
    'x-forwarded-proto': 'https',
  }
  const base = {
    requestContext: { elb: { targetGroupArn: 'arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/hooks/49e9d65c45c6791a' } },
    httpMethod: 'POST',
    path: '/hooks',
    body: '',
    isBase64Encoded: false,
  }
  if (!multiValue) return { ...base, queryStringParameters: {}, headers }
  const multiValueHeaders = Object.fromEntries(Object.entries(headers).map(([name, value]) => [name, [value]]))
  return { ...base, multiValueQueryStringParameters: {}, multiValueHeaders }
}

function toBase64(body: string | Uint8Array): string {
  return Buffer.from(typeof body === 'string' ? Buffer.from(body) : body).toString('base64')
}

/** A text body as API Gateway passes it: a string (bytes that are not UTF-8 are not kept). */
const asText = (body: string | Uint8Array): string => (typeof body === 'string' ? body : new TextDecoder().decode(body))

/** The event `source` sends for a POST with these headers (names as the client sent them) and body. */
export function lambdaEvent(
  source: LambdaSource,
  headers: Record<string, string>,
  body: string | Uint8Array,
): APIGatewayProxyEvent | APIGatewayProxyEventV2 | ALBEvent {
  if (source === 'rest' || source === 'rest-binary') {
    const event = restEvent()
    for (const [name, value] of Object.entries(headers)) {
      event.headers[name] = value
      event.multiValueHeaders[name] = [...(event.multiValueHeaders[name] ?? []), value]
    }
    const binary = source === 'rest-binary'
    return { ...event, body: binary ? toBase64(body) : asText(body), isBase64Encoded: binary }
  }
  if (source === 'http-api' || source === 'function-url') {
    const event =
      source === 'http-api'
        ? v2Event('abcdef1234.execute-api.us-east-1.amazonaws.com', 'POST /hooks')
        : v2Event('abcdefghijklmnopqrstuvwxyz123456.lambda-url.us-east-1.on.aws', '$default')
    for (const [name, value] of Object.entries(headers)) {
      const key = name.toLowerCase()
      event.headers[key] = event.headers[key] === undefined ? value : `${event.headers[key]},${value}`
    }
    return { ...event, body: asText(body) }
  }
  const multi = source === 'alb-multi-value'
  const event = albEvent(multi)
  for (const [name, value] of Object.entries(headers)) {
    const key = name.toLowerCase()
    if (multi && event.multiValueHeaders) event.multiValueHeaders[key] = [...(event.multiValueHeaders[key] ?? []), value]
    else if (event.headers) event.headers[key] = value
  }
  // With multi-value headers on, the test also sends the body as ALB sends binary content: base64.
  return { ...event, body: multi ? toBase64(body) : asText(body), isBase64Encoded: multi }
}

/** A Lambda context as the Node runtime passes it, for an invocation with `remainingMs` left (default 10 s). */
export function lambdaContext(remainingMs = 10_000): Context {
  const deadline = Date.now() + remainingMs
  return {
    callbackWaitsForEmptyEventLoop: true,
    functionName: 'email-webhooks',
    functionVersion: '$LATEST',
    invokedFunctionArn: 'arn:aws:lambda:us-east-1:123456789012:function:email-webhooks',
    memoryLimitInMB: '512',
    awsRequestId: crypto.randomUUID(),
    logGroupName: '/aws/lambda/email-webhooks',
    logStreamName: '2026/04/09/[$LATEST]0123456789abcdef0123456789abcdef',
    getRemainingTimeInMillis: () => deadline - Date.now(),
    done: () => {},
    fail: () => {},
    succeed: () => {},
  }
}
