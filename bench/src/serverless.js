/**
 * The DynamoDB store on a local DynamoDB-compatible server (dynalite from npm, in memory, in its own
 * process on 127.0.0.1): claims per second of `DynamoDBDedupStore` against a hand-written
 * conditional write on the same server and the same client (`PutItem` with
 * `attribute_not_exists(pk)`, the least a claim can be), for fresh keys and for keys already done,
 * in paired rounds (hand-written, ours, hand-written, ours, …), medians of the rounds. An EMULATOR
 * figure: it says what the store adds over one conditional write (its expressions, the SDK's
 * work, the read dynalite makes it do on a failed condition), not how fast DynamoDB is.
 *
 *   node bench/src/serverless.js [--rounds 5] [--events 2000] [--concurrency 10]
 * Prints a Markdown section for bench/RESULTS.md. Build first: it imports the built packages.
 */
import { spawn } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { cpus, loadavg, totalmem } from 'node:os'
import { dirname, join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { parseArgs } from 'node:util'
import { CreateTableCommand, DynamoDBClient, PutItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb'
import { DynamoDBDedupStore } from '@email-webhooks/core/dynamodb'

const require = createRequire(import.meta.url)
const { values: args } = parseArgs({
  options: {
    rounds: { type: 'string', default: '7' },
    events: { type: 'string', default: '2000' },
    concurrency: { type: 'string', default: '10' },
  },
})
const ROUNDS = Number(args.rounds)
const EVENTS = Number(args.events)
const CONCURRENCY = Number(args.concurrency)
const OPTIONS = { leaseMs: 30_000, retentionMs: 7 * 24 * 3600_000 }
const TABLE = 'bench_dedup'

/** dynalite in a child process (so its CPU is not the bench's); resolves with its endpoint and a stop. */
function startDynalite() {
  const script = `const d = require(${JSON.stringify(require.resolve('dynalite'))})({ createTableMs: 0 });
d.listen(0, '127.0.0.1', () => console.log('dynalite http://127.0.0.1:' + d.address().port))`
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] })
    const timer = setTimeout(() => reject(new Error('dynalite did not start in 20 s')), 20_000)
    child.stdout.on('data', (chunk) => {
      const match = /dynalite (http:\S+)/.exec(String(chunk))
      if (!match) return
      clearTimeout(timer)
      resolve({ endpoint: match[1], stop: () => child.kill('SIGTERM') })
    })
    child.once('exit', (code) => reject(new Error(`dynalite exited (${code})`)))
  })
}

/** Runs `call(key)` for `keys` with CONCURRENCY in flight; returns calls per second. */
async function rate(keys, call) {
  let next = 0
  const lane = async () => {
    while (next < keys.length) await call(keys[next++])
  }
  const start = performance.now()
  await Promise.all(Array.from({ length: CONCURRENCY }, lane))
  return keys.length / ((performance.now() - start) / 1000)
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}
const fresh = () => Array.from({ length: EVENTS }, () => `bench:${randomUUID()}`)

const server = await startDynalite()
const client = new DynamoDBClient({
  region: 'us-east-1',
  endpoint: server.endpoint,
  credentials: { accessKeyId: 'bench', secretAccessKey: 'bench' },
})
const startLoad = loadavg()
try {
  await client.send(
    new CreateTableCommand({
      TableName: TABLE,
      AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
      KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
      BillingMode: 'PAY_PER_REQUEST',
    }),
  )
  const store = new DynamoDBDedupStore({ client, table: TABLE })
  const hand = async (key) => {
    try {
      await client.send(
        new PutItemCommand({
          TableName: TABLE,
          Item: { pk: { S: key }, expiresAt: { N: String(Date.now() + OPTIONS.retentionMs) } },
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      )
      return true
    } catch (error) {
      if (error.name === 'ConditionalCheckFailedException') return false
      throw error
    }
  }
  // The same conditional write as the store's claim, written by hand: what the server itself costs for it.
  const handLease = async (key) => {
    const now = Date.now()
    try {
      await client.send(
        new UpdateItemCommand({
          TableName: TABLE,
          Key: { pk: { S: key } },
          UpdateExpression: 'SET #st = :lease, #tok = :tok, #exp = :exp, #ttl = :ttl, #att = if_not_exists(#att, :zero) + :one, #sv = :sv',
          ConditionExpression:
            '(attribute_not_exists(#pk) OR #exp <= :now OR (#st = :lease AND attribute_not_exists(#tok))) AND (attribute_not_exists(#sv) OR #sv <= :sv)',
          ExpressionAttributeNames: {
            '#pk': 'pk',
            '#st': 'status',
            '#tok': 'token',
            '#att': 'attempt',
            '#exp': 'expiresAt',
            '#ttl': 'ttl',
            '#sv': 'schemaVersion',
          },
          ExpressionAttributeValues: {
            ':sv': { N: '1' },
            ':ttl': { N: String(Math.ceil((now + OPTIONS.leaseMs + 3_600_000) / 1000)) },
            ':lease': { S: 'lease' },
            ':tok': { S: randomUUID() },
            ':exp': { N: String(now + OPTIONS.leaseMs) },
            ':zero': { N: '0' },
            ':one': { N: '1' },
            ':now': { N: String(now) },
          },
          ReturnValues: 'UPDATED_NEW',
        }),
      )
      return true
    } catch (error) {
      if (error.name === 'ConditionalCheckFailedException') return false
      throw error
    }
  }
  const ours = async (key) => {
    const result = await store.claim(key, OPTIONS)
    if (result.status === 'acquired') await store.complete(result.claim, OPTIONS)
    return result.status
  }
  const oursClaim = async (key) => (await store.claim(key, OPTIONS)).status
  const cases = {
    'claim, fresh keys': { hand: (keys) => rate(keys, hand), ours: (keys) => rate(keys, oursClaim), keys: fresh },
    'claim, fresh keys (hand-written: the same conditional UpdateItem)': {
      hand: (keys) => rate(keys, handLease),
      ours: (keys) => rate(keys, oursClaim),
      keys: fresh,
    },
    'claim of a done key (duplicate)': {
      hand: (keys) => rate(keys, hand),
      ours: (keys) => rate(keys, oursClaim),
      // Keys written once (by the same kind of call) before the timed pass.
      keys: () => fresh(),
      before: async (keys, kind) => (kind === 'hand' ? rate(keys, hand) : rate(keys, ours)),
    },
    'claim + complete, fresh keys (hand-written: one PutItem)': {
      hand: (keys) => rate(keys, hand),
      ours: (keys) => rate(keys, ours),
      keys: fresh,
    },
  }
  // Warm-up: connections, the SDK's first calls, dynalite's JIT.
  await rate(fresh().slice(0, 500), hand)
  await rate(fresh().slice(0, 500), ours)
  const rows = []
  for (const [name, c] of Object.entries(cases)) {
    const hands = []
    const ourRates = []
    const ratios = []
    for (let round = 0; round < ROUNDS; round++) {
      const handKeys = c.keys()
      const ourKeys = c.keys()
      if (c.before) {
        await c.before(handKeys, 'hand')
        await c.before(ourKeys, 'ours')
      }
      // The order alternates, so that a drift in the machine's load falls on both sides alike.
      let h
      let o
      if (round % 2 === 0) {
        h = await c.hand(handKeys)
        o = await c.ours(ourKeys)
      } else {
        o = await c.ours(ourKeys)
        h = await c.hand(handKeys)
      }
      hands.push(h)
      ourRates.push(o)
      ratios.push(o / h)
    }
    rows.push({ name, hand: median(hands), ours: median(ourRates), ratio: median(ratios), ratios })
  }
  const endLoad = loadavg()
  const version = (name) => JSON.parse(readFileSync(require.resolve(`${name}/package.json`), 'utf8')).version
  const sdk = JSON.parse(readFileSync(join(dirname(require.resolve('@aws-sdk/client-dynamodb')), '..', 'package.json'), 'utf8')).version
  const n = (value) => Math.round(value).toLocaleString('en-US')
  console.log(`## DynamoDB store on dynalite (an emulator figure, not AWS), ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC (issue 44)

Measured on ${cpus().length} × ${cpus()[0]?.model.trim()}, ${Math.round(totalmem() / 2 ** 30)} GiB; load average ${startLoad[0].toFixed(2)} at start, ${endLoad[0].toFixed(2)} at end. Node ${process.version}, dynalite ${version('dynalite')} (in memory, its own process, unpinned), @aws-sdk/client-dynamodb ${sdk}, @email-webhooks/core 0.1.0 (this worktree's build). \`node bench/src/serverless.js --rounds ${ROUNDS} --events ${EVENTS} --concurrency ${CONCURRENCY}\`.

${n(EVENTS)} calls per round with ${CONCURRENCY} in flight on one client; ${ROUNDS} rounds, hand-written and ours interleaved (which goes first alternates); calls per second are the medians of the rounds, the ratio the median of the rounds' ratios. The least hand-written claim is one \`PutItem\` with \`attribute_not_exists(pk)\`: it cannot tell an event in flight from one handled, nor take over a lapsed lease; the second row writes by hand the \`UpdateItem\` the store sends (its condition takes over lapsed and released leases), which isolates what the store adds on the client from what the server spends on the richer condition. dynalite ignores \`ReturnValuesOnConditionCheckFailure\`, so here a failed claim costs the store a second call (a consistent \`GetItem\`) that DynamoDB itself spares it.

| Case | hand-written /s | ours /s | ours ÷ hand-written (median) | rounds' ratios |
| --- | ---: | ---: | ---: | --- |
${rows.map((r) => `| ${r.name} | ${n(r.hand)} | ${n(r.ours)} | ${r.ratio.toFixed(2)}× | ${r.ratios.map((x) => x.toFixed(2)).join(', ')} |`).join('\n')}
`)
} finally {
  client.destroy()
  server.stop()
}
