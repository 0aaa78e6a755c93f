/**
 * The table of `DynamoDBDedupStore`: its key schema (for users who create it by hand, and for
 * CloudFormation, SAM or CDK), the item's attributes, the expressions the store sends, and how an
 * item read back reads as a state. One item per dedup key: the partition key is the namespaced
 * event id, so load spreads over partitions (never one hot partition per app).
 *
 * Every time is milliseconds since the epoch on the caller's clock (`expiresAt`), checked by the
 * condition of each write: correctness never depends on DynamoDB's TTL deletion, which lags by up
 * to days. The `ttl` attribute (seconds, as TTL wants) is for that cleanup only.
 */
import { PACKAGE } from './errors.js'

/** Table used when `table` is not given. */
export const DEFAULT_DYNAMODB_TABLE = 'email_webhook_dedup'
/** Partition key attribute (type String) used when `partitionKey` is not given. */
export const DEFAULT_DYNAMODB_PARTITION_KEY = 'pk'
/** The attribute that DynamoDB's TTL should be enabled on (seconds since the epoch). */
export const DYNAMODB_TTL_ATTRIBUTE = 'ttl'

const TABLE_NAME_PATTERN = /^[A-Za-z0-9_.-]{3,255}$/
const ATTRIBUTE_PATTERN = /^[A-Za-z0-9_.-]{1,255}$/

/**
 * A released or lapsed lease keeps its attempt count (the next claim continues it, `ctx.attempt`)
 * this long before TTL may delete it; a done item is kept for its retention. TTL never deletes an
 * item before its `expiresAt`.
 */
const LEASE_MEMORY_MS = 60 * 60 * 1000

/** The state of an item: a lease (held while `token` is there and `expiresAt` is ahead), or done. */
const LEASE = 'lease'
const DONE = 'done'

/**
 * The item layout's version, written on every item a claim writes (`schemaVersion`, a number): 1 is
 * the first. DynamoDB has no table the store owns to stamp, so each item carries it, at no extra
 * call: a claim never takes over an item of a newer layout (its condition says so) and the store
 * refuses such an item, whichever way it reads it (a failed condition's `ALL_OLD`, or a `GetItem`).
 */
export const DYNAMODB_SCHEMA_VERSION = 1
const SCHEMA_VERSION_ATTRIBUTE = 'schemaVersion'

/** A DynamoDB attribute value, as the low-level client sends and returns it (only the kinds the store uses). */
export type AttributeValue = { S: string } | { N: string }
/** An item as the low-level client returns it. */
export type DynamoItem = Record<string, { S?: string; N?: string } | undefined>

/**
 * The `CreateTable` input of the store's table: a String partition key, no sort key, on-demand
 * capacity. Enable TTL on `ttl` afterwards (`UpdateTimeToLive`) for cleanup.
 * @param table Table name; default `email_webhook_dedup`.
 * @param partitionKey Partition key attribute; default `pk`.
 * @example
 * await client.send(new CreateTableCommand(dynamoDBTableInput('email_webhook_dedup')))
 */
export function dynamoDBTableInput(
  table: string = DEFAULT_DYNAMODB_TABLE,
  partitionKey: string = DEFAULT_DYNAMODB_PARTITION_KEY,
): {
  TableName: string
  AttributeDefinitions: { AttributeName: string; AttributeType: 'S' }[]
  KeySchema: { AttributeName: string; KeyType: 'HASH' }[]
  BillingMode: 'PAY_PER_REQUEST'
} {
  assertTableName(table)
  assertAttributeName('partitionKey', partitionKey)
  return {
    TableName: table,
    AttributeDefinitions: [{ AttributeName: partitionKey, AttributeType: 'S' }],
    KeySchema: [{ AttributeName: partitionKey, KeyType: 'HASH' }],
    BillingMode: 'PAY_PER_REQUEST',
  }
}

/**
 * Checks a DynamoDB table name.
 * @throws {TypeError} when it is not 3 to 255 letters, digits, `_`, `-` or `.`.
 */
export function assertTableName(table: unknown): asserts table is string {
  if (typeof table !== 'string' || !TABLE_NAME_PATTERN.test(table)) {
    throw new TypeError(`${PACKAGE} table must be a DynamoDB table name: 3 to 255 letters, digits, _, - or ., got ${String(table)}.`)
  }
}

/**
 * Checks an attribute name option.
 * @throws {TypeError} when it is not 1 to 255 letters, digits, `_`, `-` or `.`.
 */
export function assertAttributeName(name: string, value: unknown): asserts value is string {
  if (typeof value !== 'string' || !ATTRIBUTE_PATTERN.test(value)) {
    throw new TypeError(`${PACKAGE} ${name} must be an attribute name of 1 to 255 letters, digits, _, - or ., got ${String(value)}.`)
  }
}

/** `#name` placeholders of every attribute the store writes (names such as `status` and `ttl` are reserved words in expressions). */
function names(partitionKey: string): Record<string, string> {
  return {
    '#pk': partitionKey,
    '#st': 'status',
    '#tok': 'token',
    '#att': 'attempt',
    '#exp': 'expiresAt',
    '#ttl': DYNAMODB_TTL_ATTRIBUTE,
    '#sv': SCHEMA_VERSION_ATTRIBUTE,
  }
}

const n = (value: number): AttributeValue => ({ N: String(value) })
const s = (value: string): AttributeValue => ({ S: value })
/** The TTL attribute for an item that must live until `untilMs`: whole seconds, rounded up. */
const ttlOf = (untilMs: number): AttributeValue => n(Math.ceil(untilMs / 1000))

/** The input of one `UpdateItem` or `GetItem`, without `TableName` and `Key`, which the store adds. */
export interface UpdateParts {
  UpdateExpression: string
  ConditionExpression: string
  ExpressionAttributeNames: Record<string, string>
  ExpressionAttributeValues: Record<string, AttributeValue>
}

/** The expressions of the store's writes on `partitionKey`'s table. */
export class DynamoExpressions {
  readonly #names: Record<string, string>
  /** Per expression text, the names it uses (each expression is one of a few fixed texts). */
  readonly #usedNames = new Map<string, Record<string, string>>()

  constructor(partitionKey: string) {
    this.#names = names(partitionKey)
  }

  /**
   * `parts` with only the `#names` its expressions use: DynamoDB refuses a request that defines a
   * name it does not use (ValidationException).
   */
  #used(parts: Omit<UpdateParts, 'ExpressionAttributeNames'>): UpdateParts {
    const text = `${parts.UpdateExpression} ${parts.ConditionExpression}`
    let picked = this.#usedNames.get(text)
    if (picked === undefined) {
      picked = {}
      for (const [placeholder, name] of Object.entries(this.#names))
        if (new RegExp(`${placeholder}\\b`).test(text)) picked[placeholder] = name
      this.#usedNames.set(text, picked)
    }
    return { ...parts, ExpressionAttributeNames: picked }
  }

  /**
   * The claim: one conditional write that takes the key when no item is there, when its
   * `expiresAt` has passed (a lapsed lease, or a done record past its retention), or when it is a
   * released lease (no token). A new key and a done record count attempts from 1 (complete sets
   * them to 0); a lease taken over adds one to its count.
   */
  claim(token: string, now: number, leaseMs: number): UpdateParts {
    const expiresAt = now + leaseMs
    return this.#used({
      UpdateExpression: 'SET #st = :lease, #tok = :tok, #exp = :exp, #ttl = :ttl, #att = if_not_exists(#att, :zero) + :one, #sv = :sv',
      ConditionExpression:
        '(attribute_not_exists(#pk) OR #exp <= :now OR (#st = :lease AND attribute_not_exists(#tok))) AND (attribute_not_exists(#sv) OR #sv <= :sv)',
      ExpressionAttributeValues: {
        ':sv': n(DYNAMODB_SCHEMA_VERSION),
        ':lease': s(LEASE),
        ':tok': s(token),
        ':exp': n(expiresAt),
        ':ttl': ttlOf(expiresAt + LEASE_MEMORY_MS),
        ':zero': n(0),
        ':one': n(1),
        ':now': n(now),
      },
    })
  }

  /** Done for `retentionMs`, while `token` holds the lease (even a lapsed one nobody took over). */
  complete(token: string, now: number, retentionMs: number): UpdateParts {
    const expiresAt = now + retentionMs
    return this.#used({
      UpdateExpression: 'SET #st = :done, #exp = :exp, #ttl = :ttl, #att = :zero REMOVE #tok',
      ConditionExpression: '#tok = :tok AND #st = :lease',
      ExpressionAttributeValues: {
        ':done': s(DONE),
        ':exp': n(expiresAt),
        ':ttl': ttlOf(expiresAt),
        ':zero': n(0),
        ':tok': s(token),
        ':lease': s(LEASE),
      },
    })
  }

  /** Gives the lease up (no token: claimable at once), keeping its attempt count for the next claim. */
  release(token: string, now: number): UpdateParts {
    return this.#used({
      UpdateExpression: 'SET #exp = :now, #ttl = :ttl REMOVE #tok',
      ConditionExpression: '#tok = :tok AND #st = :lease',
      ExpressionAttributeValues: { ':now': n(now), ':ttl': ttlOf(now + LEASE_MEMORY_MS), ':tok': s(token), ':lease': s(LEASE) },
    })
  }

  /** Renews a live lease of `token` to end `leaseMs` from now. */
  extend(token: string, now: number, leaseMs: number): UpdateParts {
    const expiresAt = now + leaseMs
    return this.#used({
      UpdateExpression: 'SET #exp = :exp, #ttl = :ttl',
      ConditionExpression: '#tok = :tok AND #st = :lease AND #exp > :now',
      ExpressionAttributeValues: {
        ':exp': n(expiresAt),
        ':ttl': ttlOf(expiresAt + LEASE_MEMORY_MS),
        ':tok': s(token),
        ':lease': s(LEASE),
        ':now': n(now),
      },
    })
  }
}

/** What an item says about its key at `now`. */
export type ItemState = { state: 'done' } | { state: 'in_flight'; leftMs: number } | { state: 'absent' }

/** Reads an item (from a failed condition's `ALL_OLD`, or a consistent `GetItem`) as done, a live lease, or free. */
export function stateOf(item: DynamoItem | undefined, now: number): ItemState {
  if (item === undefined) return { state: 'absent' }
  const expiresAt = Number(item.expiresAt?.N)
  if (!Number.isFinite(expiresAt) || expiresAt <= now) return { state: 'absent' }
  const status = item.status?.S
  if (status === DONE) return { state: 'done' }
  if (status === LEASE && item.token?.S !== undefined) return { state: 'in_flight', leftMs: expiresAt - now }
  return { state: 'absent' }
}

/** The layout version of an item a newer release wrote, or undefined for this one's (or an item from before the attribute). */
export function newerSchemaOf(item: DynamoItem | undefined): number | undefined {
  const version = Number(item?.[SCHEMA_VERSION_ATTRIBUTE]?.N)
  return Number.isFinite(version) && version > DYNAMODB_SCHEMA_VERSION ? version : undefined
}

/** The attempt a successful claim wrote (`ReturnValues: UPDATED_NEW`). */
export function attemptOf(attributes: DynamoItem | undefined): number {
  const attempt = Number(attributes?.attempt?.N)
  return Number.isSafeInteger(attempt) && attempt >= 1 ? attempt : 1
}
