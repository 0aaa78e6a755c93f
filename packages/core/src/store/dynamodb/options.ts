/**
 * The options of `DynamoDBDedupStore`: a DynamoDB client of the app's (the store never destroys
 * it), or a region (and an endpoint, for a local server) from which the store makes its own; the
 * table and its partition key; checked once when the store is made. The AWS SDK
 * (`@aws-sdk/client-dynamodb` v3, an optional peer dependency, part of the Lambda Node.js runtimes)
 * is loaded only here.
 */
import { optionalDriver } from '../driver.js'
import { durationProblem } from '../durations.js'
import { PACKAGE, type TableInfo } from './errors.js'
import { assertAttributeName, assertTableName, DEFAULT_DYNAMODB_PARTITION_KEY, DEFAULT_DYNAMODB_TABLE } from './schema.js'

/** Default longest time of one call, its SDK retries included: past it the call is aborted. */
export const DEFAULT_DYNAMODB_CALL_TIMEOUT_MS = 5_000

/**
 * The part of a DynamoDB client the store uses; a `DynamoDBClient` of `@aws-sdk/client-dynamodb`
 * v3 fits (not the document client).
 */
export interface DynamoDBClientLike {
  send(command: object, options?: { abortSignal?: AbortSignal }): Promise<unknown>
  destroy?(): void
}

/** Options of `DynamoDBDedupStore`: give `client`, or `region` (the store makes its client). */
export interface DynamoDBDedupStoreOptions {
  /**
   * A `DynamoDBClient` of `@aws-sdk/client-dynamodb` v3 of the app's; `close()` leaves it alone.
   */
  client?: DynamoDBClientLike
  /**
   * The AWS region of the client the store makes instead (credentials from the default chain: the
   * function's role); `close()` destroys that client.
   * @defaultValue `AWS_REGION` (set on Lambda)
   */
  region?: string
  /**
   * Another endpoint for the client the store makes, such as a local DynamoDB
   * (`http://127.0.0.1:8000`); the SDK's `AWS_ENDPOINT_URL_DYNAMODB` works too.
   */
  endpoint?: string
  /**
   * The table: a String partition key, no sort key (`dynamoDBTableInput()` gives its `CreateTable`
   * input; the AWS Lambda page of the docs has CloudFormation and CDK).
   * @defaultValue `email_webhook_dedup`
   */
  table?: string
  /**
   * The name of the table's partition key, a String attribute.
   * @defaultValue `pk`
   */
  partitionKey?: string
  /**
   * Longest time of one call, the SDK's own retries included, whole ms: past it the call is aborted
   * (`DedupStoreError` code `timeout`).
   * @defaultValue `5000`
   */
  callTimeoutMs?: number
  /**
   * Clock in milliseconds since the epoch, for leases and retention.
   * @defaultValue `Date.now`
   */
  now?: () => number
}

/** The SDK's parts the store uses. */
export interface DynamoDBSdk {
  DynamoDBClient: new (config: { region?: string; endpoint?: string }) => DynamoDBClientLike
  GetItemCommand: new (input: object) => object
  UpdateItemCommand: new (input: object) => object
}

const loadSdk = optionalDriver(
  '@aws-sdk/client-dynamodb',
  (module) => {
    const sdk = module as Partial<DynamoDBSdk>
    if (!sdk.DynamoDBClient || !sdk.GetItemCommand || !sdk.UpdateItemCommand) throw new Error('not the AWS SDK v3 DynamoDB client')
    return sdk as DynamoDBSdk
  },
  `${PACKAGE} @aws-sdk/client-dynamodb could not be loaded, so the DynamoDB dedup store is unavailable. Install it with \`npm install @aws-sdk/client-dynamodb\` (version 3; the Lambda Node.js runtimes include it).`,
)

/** The checked options, the client and the SDK's commands. */
export interface DynamoDBConnection {
  sdk: DynamoDBSdk
  client: DynamoDBClientLike
  /** The store made the client: it destroys it on close. */
  ownsClient: boolean
  info: TableInfo
  callTimeoutMs: number
  now: () => number
}

/**
 * Checks the options, loads the SDK and makes the client (from a region) or takes the given one.
 * @throws {TypeError} when an option is invalid, or both or neither of `client` and a region are there.
 * @throws {DedupStoreError} `driver_missing` when `@aws-sdk/client-dynamodb` is not installed.
 */
export function connect(options: DynamoDBDedupStoreOptions = {}): DynamoDBConnection {
  if (options === null || typeof options !== 'object') throw new TypeError(`${PACKAGE} DynamoDBDedupStore needs an options object.`)
  const table = options.table ?? DEFAULT_DYNAMODB_TABLE
  assertTableName(table)
  const partitionKey = options.partitionKey ?? DEFAULT_DYNAMODB_PARTITION_KEY
  assertAttributeName('partitionKey', partitionKey)
  const callTimeoutMs = options.callTimeoutMs ?? DEFAULT_DYNAMODB_CALL_TIMEOUT_MS
  const problem = durationProblem('callTimeoutMs', callTimeoutMs)
  if (problem) throw new TypeError(`${PACKAGE} ${problem}`)
  if (options.now !== undefined && typeof options.now !== 'function') throw new TypeError(`${PACKAGE} now must be a function returning ms.`)
  const now = options.now ?? Date.now
  const { client, endpoint } = options
  if (endpoint !== undefined && (typeof endpoint !== 'string' || !/^https?:\/\//.test(endpoint))) {
    throw new TypeError(`${PACKAGE} endpoint must be an http(s) URL such as http://127.0.0.1:8000.`)
  }
  if (client !== undefined) {
    if (client === null || typeof client !== 'object' || typeof client.send !== 'function') {
      throw new TypeError(`${PACKAGE} client must be a DynamoDBClient of @aws-sdk/client-dynamodb v3 (an object with send()).`)
    }
    if (options.region !== undefined || endpoint !== undefined) {
      throw new TypeError(`${PACKAGE} give either client, or region (and endpoint) for a client the store makes, not both.`)
    }
    return { sdk: loadSdk(), client, ownsClient: false, info: { table, partitionKey, where: '' }, callTimeoutMs, now }
  }
  const region = options.region ?? globalThis.process?.env?.AWS_REGION
  if (typeof region !== 'string' || region.length === 0) {
    throw new TypeError(`${PACKAGE} DynamoDBDedupStore needs { client } or { region } (AWS_REGION is not set).`)
  }
  const sdk = loadSdk()
  const made = new sdk.DynamoDBClient(endpoint === undefined ? { region } : { region, endpoint })
  const where = endpoint === undefined ? `in region ${region}` : `at ${endpoint}`
  return { sdk, client: made, ownsClient: true, info: { table, partitionKey, where }, callTimeoutMs, now }
}
