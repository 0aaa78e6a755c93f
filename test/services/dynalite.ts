/**
 * A DynamoDB-compatible server for the DynamoDB store's tests: dynalite from npm
 * (dynalite-server.mjs), in memory, in a child process on 127.0.0.1 and a free port, stopped by
 * `stop()` or when the test process exits. dynalite has no transactions, no TTL settings and
 * ignores `ReturnValuesOnConditionCheckFailure` (a failed condition comes back without the item).
 *
 * `startDynamoProxy` puts a small HTTP proxy in front of it that answers as the DynamoDB service
 * does where dynalite cannot be made to: throttling (`ProvisionedThroughputExceededException`,
 * `ThrottlingException`), `AccessDeniedException`, and a failed condition WITH the item
 * (`ReturnValuesOnConditionCheckFailure: ALL_OLD`, read back from dynalite with a consistent
 * GetItem). Only the service is played; the store and the AWS SDK are the real ones.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { createServer, request as httpRequest, type IncomingHttpHeaders, type Server } from 'node:http'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { CreateTableCommand, DynamoDBClient, type DynamoDBClientConfig } from '@aws-sdk/client-dynamodb'

const HERE = dirname(fileURLToPath(import.meta.url))
const START_TIMEOUT_MS = 20_000
/** dynalite checks no signature; the SDK needs some credentials to sign with. */
export const LOCAL_CREDENTIALS = { accessKeyId: 'local-test-key', secretAccessKey: 'local-test-secret-do-not-print' }

export interface Dynalite {
  endpoint: string
  /** A client of the server (or of `endpoint`), with local credentials and the SDK's defaults otherwise. */
  client(config?: DynamoDBClientConfig & { endpoint?: string }): DynamoDBClient
  /** Creates a table keyed by `partitionKey` (String; default `pk`), or by a Number key when `keyType` is `N`. */
  createTable(table: string, partitionKey?: string, keyType?: 'S' | 'N'): Promise<void>
  stop(): Promise<void>
}

const children = new Set<ChildProcess>()
process.once('exit', () => {
  for (const child of children) child.kill('SIGKILL')
})

/** Starts dynalite in a child process; resolves once it listens. */
export function startDynalite(): Promise<Dynalite> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(HERE, 'dynalite-server.mjs')], { cwd: HERE, stdio: ['pipe', 'pipe', 'pipe'] })
    children.add(child)
    let output = ''
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`dynalite did not start within ${START_TIMEOUT_MS} ms:\n${output}`))
    }, START_TIMEOUT_MS)
    const exited = new Promise<void>((done) => child.once('close', () => done()))
    const onData = (chunk: Buffer) => {
      output += chunk
      const match = /dynalite (http:\/\/127\.0\.0\.1:\d+)/.exec(output)
      if (!match) return
      clearTimeout(timer)
      child.stdout?.off('data', onData)
      const endpoint = match[1] as string
      const client = (config: DynamoDBClientConfig & { endpoint?: string } = {}) =>
        new DynamoDBClient({ region: 'us-east-1', endpoint, credentials: LOCAL_CREDENTIALS, ...config })
      resolve({
        endpoint,
        client,
        async createTable(table, partitionKey = 'pk', keyType = 'S') {
          const admin = client()
          try {
            await admin.send(
              new CreateTableCommand({
                TableName: table,
                AttributeDefinitions: [{ AttributeName: partitionKey, AttributeType: keyType }],
                KeySchema: [{ AttributeName: partitionKey, KeyType: 'HASH' }],
                BillingMode: 'PAY_PER_REQUEST',
              }),
            )
          } finally {
            admin.destroy()
          }
        },
        async stop() {
          children.delete(child)
          if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM')
          await Promise.race([exited, new Promise((done) => setTimeout(done, 5_000))])
          if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
        },
      })
    }
    child.stdout?.on('data', onData)
    child.stderr?.on('data', (chunk: Buffer) => {
      output += chunk
    })
    child.once('close', (code) => {
      clearTimeout(timer)
      children.delete(child)
      reject(new Error(`dynalite exited (${code}) before listening:\n${output}`))
    })
  })
}

/** What the proxy does with the next requests. */
export type ProxyMode =
  /** Forward as is. */
  | 'pass'
  /** Forward; a failed condition of an UpdateItem or PutItem that asked for ALL_OLD comes back with the item, as the service sends it. */
  | 'all-old'
  /** Answer every call 400 ProvisionedThroughputExceededException, as DynamoDB does for a table past its provisioned capacity. */
  | 'provisioned-throttle'
  /** Answer every call 400 ThrottlingException, as DynamoDB does past an account or control-plane rate. */
  | 'throttle'
  /** Answer every call 400 AccessDeniedException, as DynamoDB does when the role lacks the action. */
  | 'deny'
  /** Never answer (a connection that hangs). */
  | 'stall'

export interface DynamoProxy {
  endpoint: string
  mode: ProxyMode
  /** Calls seen, by X-Amz-Target operation (`UpdateItem`, `GetItem`, …). */
  calls: Record<string, number>
  /**
   * Once: the next call of `operation` is forwarded and applied, and its answer lost: the
   * connection dropped (`drop`: the SDK sends the call again) or never answered (`stall`).
   */
  loseNext?: { operation: string; how: 'drop' | 'stall' }
  stop(): Promise<void>
}

const SERVICE_ERRORS: Record<string, { type: string; message: string }> = {
  'provisioned-throttle': {
    type: 'com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException',
    message:
      'The level of configured provisioned throughput for the table was exceeded. Consider increasing your provisioning level with the UpdateTable API.',
  },
  throttle: { type: 'com.amazon.coral.availability#ThrottlingException', message: 'Rate of requests exceeds the allowed throughput.' },
  deny: {
    type: 'com.amazon.coral.service#AccessDeniedException',
    message:
      'User: arn:aws:sts::123456789012:assumed-role/webhooks-fn/webhooks is not authorized to perform: dynamodb:UpdateItem on resource: arn:aws:dynamodb:us-east-1:123456789012:table/hooks because no identity-based policy allows the dynamodb:UpdateItem action',
  },
}

function forward(
  target: URL,
  method: string,
  path: string,
  headers: IncomingHttpHeaders,
  body: Buffer,
): Promise<{ status: number; headers: IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: target.hostname, port: target.port, method, path, headers }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (chunk: Buffer) => chunks.push(chunk))
      res.on('end', () => resolve({ status: res.statusCode ?? 500, headers: res.headers, body: Buffer.concat(chunks) }))
      res.on('error', reject)
    })
    req.on('error', reject)
    req.end(body)
  })
}

/** Starts the proxy in front of `target` (dynalite's endpoint) on 127.0.0.1 and a free port. */
export function startDynamoProxy(target: string, mode: ProxyMode = 'pass'): Promise<DynamoProxy> {
  const upstream = new URL(target)
  const proxy: DynamoProxy = { endpoint: '', mode, calls: {}, stop: async () => {} }
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', async () => {
      const body = Buffer.concat(chunks)
      const operation = String(req.headers['x-amz-target'] ?? '').split('.')[1] ?? ''
      proxy.calls[operation] = (proxy.calls[operation] ?? 0) + 1
      const failure = SERVICE_ERRORS[proxy.mode]
      if (proxy.mode === 'stall') return
      try {
        if (failure) {
          res.writeHead(400, { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-requestid': crypto.randomUUID() })
          res.end(JSON.stringify({ __type: failure.type, message: failure.message }))
          return
        }
        const answer = await forward(upstream, req.method ?? 'POST', req.url ?? '/', req.headers, body)
        if (proxy.loseNext?.operation === operation) {
          const { how } = proxy.loseNext
          proxy.loseNext = undefined
          if (how === 'drop') req.socket.destroy()
          return
        }
        const input = JSON.parse(body.toString('utf8') || '{}') as {
          TableName?: string
          Key?: unknown
          Item?: Record<string, unknown>
          ReturnValuesOnConditionCheckFailure?: string
        }
        const conditionFailed = answer.status === 400 && answer.body.toString('utf8').includes('ConditionalCheckFailedException')
        if (proxy.mode === 'all-old' && conditionFailed && input.ReturnValuesOnConditionCheckFailure === 'ALL_OLD') {
          // The service returns the item the condition was checked against; read it back the way the store's fallback would.
          const key = input.Key ?? input.Item
          const get = Buffer.from(JSON.stringify({ TableName: input.TableName, Key: key, ConsistentRead: true }))
          const headers = { ...req.headers, 'x-amz-target': 'DynamoDB_20120810.GetItem', 'content-length': String(get.length) }
          const read = await forward(upstream, 'POST', '/', headers, get)
          const item = (JSON.parse(read.body.toString('utf8')) as { Item?: unknown }).Item
          const error = JSON.parse(answer.body.toString('utf8')) as Record<string, unknown>
          if (item) error.Item = item
          // A changed body carries no x-amz-crc32 (the SDK checks it only when present).
          res.writeHead(400, { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-requestid': crypto.randomUUID() })
          res.end(JSON.stringify(error))
          return
        }
        res.writeHead(answer.status, answer.headers)
        res.end(answer.body)
      } catch (error) {
        res.writeHead(502)
        res.end(String(error))
      }
    })
  })
  return new Promise((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      if (typeof address !== 'object' || address === null) return reject(new Error('no port'))
      proxy.endpoint = `http://127.0.0.1:${address.port}`
      proxy.stop = () =>
        new Promise<void>((done) => {
          server.closeAllConnections()
          server.close(() => done())
        })
      resolve(proxy)
    })
  })
}
