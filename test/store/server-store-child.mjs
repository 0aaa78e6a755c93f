// A worker process for server-processes.test.ts: the same modes as sqlite-child.mjs, on a
// PostgreSQL or Redis store. It talks to the parent over IPC (fork) and exits by itself after
// 30 s at most, so a failed test never leaves it running.
//   <kind> <url> race <count> <seed>   wait for 'go', claim+complete race-0..race-<count-1> in an order
//                                      shuffled by <seed>, report what it acquired
//   <kind> <url> hold <key> <lease>    claim one key with that lease, report 'claimed', then wait to be killed
//   <kind> <url> complete <count>      claim+complete crash-0.. one by one, reporting each after complete() resolved
import { PostgresDedupStore } from '@email-webhooks/core/postgres'
import { RedisDedupStore } from '@email-webhooks/core/redis'

const [kind, url, mode, arg, extra] = process.argv.slice(2)
// Each test runs on its own keys: KEY_PREFIX is unique per test.
const prefix = process.env.KEY_PREFIX ?? ''
const LONG = { leaseMs: 60_000, retentionMs: 3_600_000 }
const exitTimer = setTimeout(() => process.exit(3), 30_000)
const send = (message) => new Promise((resolve) => process.send(message, resolve))
const store = kind === 'postgres' ? new PostgresDedupStore({ connectionString: url }) : new RedisDedupStore({ url })

if (mode === 'race') {
  const count = Number(arg)
  // The order is a shuffle fixed by the seed: racers with the same seed go head-to-head.
  const order = Array.from({ length: count }, (_, i) => i)
  let seed = Number(extra) + 1
  for (let i = count - 1; i > 0; i--) {
    seed = (seed * 48_271) % 2_147_483_647
    const j = seed % (i + 1)
    ;[order[i], order[j]] = [order[j], order[i]]
  }
  // Connect (and create the table) before the start signal, so that no racer starts late.
  await store.claim('warm-up', { leaseMs: 1, retentionMs: 1 })
  await send({ type: 'ready' })
  await new Promise((resolve) => process.once('message', resolve))
  const acquired = []
  let duplicate = 0
  let inFlight = 0
  for (const i of order) {
    const result = await store.claim(`${prefix}race-${i}`, LONG)
    if (result.status === 'acquired') {
      acquired.push(`${prefix}race-${i}`)
      await store.complete(result.claim, LONG)
    } else if (result.status === 'duplicate') duplicate++
    else inFlight++
  }
  await store.close()
  await send({ type: 'result', acquired, duplicate, inFlight })
  clearTimeout(exitTimer)
  process.disconnect()
} else if (mode === 'hold') {
  await store.claim('warm-up', { leaseMs: 1, retentionMs: 1 })
  const before = Date.now()
  const result = await store.claim(`${prefix}${arg}`, { leaseMs: Number(extra), retentionMs: LONG.retentionMs })
  const after = Date.now()
  await send({ type: 'claimed', status: result.status, attempt: result.claim?.attempt, before, after })
} else if (mode === 'complete') {
  const count = Number(arg)
  for (let i = 0; i < count; i++) {
    const key = `${prefix}crash-${i}`
    const result = await store.claim(key, LONG)
    if (result.status !== 'acquired') throw new Error(`${key} was ${result.status}`)
    const ok = await store.complete(result.claim, LONG)
    await send({ type: 'completed', key, ok })
  }
} else {
  throw new Error(`unknown mode ${mode}`)
}
