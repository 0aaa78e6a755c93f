/**
 * How an error of the AWS SDK's DynamoDB client becomes a {@link DedupStoreError} code and a
 * message that names the fix. Bundled into the DynamoDB subpath. Messages name the table, the
 * region and the IAM actions; never credentials (the SDK's errors carry none).
 */
import type { DedupStoreErrorCode } from '@email-webhooks/core'

/** The prefix of every message of this store. */
export const PACKAGE = '[@email-webhooks/core/dynamodb]'

/** The IAM actions the store needs on its table. */
export const DYNAMODB_IAM_ACTIONS: readonly string[] = Object.freeze(['dynamodb:GetItem', 'dynamodb:UpdateItem'])

/** The names under which DynamoDB (and the SDK) say that a call was throttled. */
const THROTTLED = new Set([
  'ProvisionedThroughputExceededException',
  'ThrottlingException',
  'RequestLimitExceeded',
  'Throttling',
  'TooManyRequestsException',
])
const CREDENTIALS = new Set([
  'UnrecognizedClientException',
  'InvalidSignatureException',
  'ExpiredTokenException',
  'ExpiredToken',
  'MissingAuthenticationToken',
  'MissingAuthenticationTokenException',
  'InvalidClientTokenId',
  'CredentialsProviderError',
  'IncompleteSignatureException',
])
const NETWORK = new Set(['ECONNREFUSED', 'ECONNRESET', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EPIPE'])

/** What the messages say about the table. */
export interface TableInfo {
  table: string
  partitionKey: string
  /** `in region eu-west-1`, or `at http://127.0.0.1:8000`, or empty. */
  where: string
}

/** The code and message (without the package prefix) for an error the DynamoDB client threw. */
export function classify(error: unknown, info: TableInfo): { code: DedupStoreErrorCode; message: string } {
  const e = (error ?? {}) as { name?: unknown; code?: unknown; message?: unknown }
  const name = typeof e.name === 'string' ? e.name : ''
  const detail = typeof e.message === 'string' ? e.message : String(error)
  const table = `the DynamoDB table "${info.table}"${info.where ? ` ${info.where}` : ''}`
  if (THROTTLED.has(name)) {
    return {
      code: 'throttled',
      message: `DynamoDB throttled ${table} (${name}); nothing was written and the sender will retry (the receiver answers 503 with Retry-After). If it lasts, switch the table to on-demand capacity (BillingMode PAY_PER_REQUEST) or raise its read and write capacity.`,
    }
  }
  if (name === 'ResourceNotFoundException') {
    return {
      code: 'misconfigured',
      message: `${table} does not exist (${detail}): create it with a String partition key "${info.partitionKey}" and no sort key (the CloudFormation or CDK snippet of the docs' AWS Lambda page, or dynamoDBTableInput()), and enable TTL on "ttl"; or fix the table name and region.`,
    }
  }
  if (name === 'ValidationException' && /key element does not match the schema|required keys|key schema|Missing the key/i.test(detail)) {
    return {
      code: 'misconfigured',
      message: `${table} has another key schema than the store needs (${detail}): its partition key must be the String attribute "${info.partitionKey}", with no sort key. Create a table for the store, or pass partitionKey with the name of the table's String partition key.`,
    }
  }
  if (name === 'AccessDeniedException' || name === 'UnauthorizedOperation' || name === 'AccessDenied') {
    return {
      code: 'misconfigured',
      message: `the credentials may not use ${table} (${name}): grant the function's role ${DYNAMODB_IAM_ACTIONS.join(' and ')} on the table's ARN.`,
    }
  }
  if (CREDENTIALS.has(name)) {
    return {
      code: 'auth_failed',
      message: `DynamoDB refused the credentials for ${table} (${name}): check the function's role, or the access key, secret and session token the client uses, and the region.`,
    }
  }
  if (name === 'AbortError' || name === 'TimeoutError') {
    return {
      code: 'timeout',
      message: `${table} did not answer within the store's callTimeoutMs (${name}); the sender will retry.`,
    }
  }
  const errno = typeof e.code === 'string' ? e.code : ''
  if (NETWORK.has(errno) || /ECONNREFUSED|ECONNRESET|ENOTFOUND|socket hang up/.test(detail)) {
    return {
      code: 'connection_failed',
      message: `cannot reach DynamoDB for ${table} (${errno || detail}): check the endpoint, the region and the network.`,
    }
  }
  if (name === 'InternalServerError' || name === 'ServiceUnavailable' || name === 'ServiceUnavailableException') {
    return { code: 'connection_failed', message: `DynamoDB failed the call on ${table} (${name}); the sender will retry.` }
  }
  return { code: 'command_failed', message: `a call on ${table} failed${name ? ` (${name})` : ''}: ${detail}` }
}
