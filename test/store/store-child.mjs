// A worker process for sqlite-processes.test.ts and server-processes.test.ts, forked through
// process-harness.ts. It talks to the parent over IPC (fork) and exits by itself after 30 s at
// most, so a failed test never leaves it running.
//   <kind> <target> race <count> <seed>  wait for 'go', claim+complete race-0..race-<count-1> in an
//                                        order shuffled by <seed>, report what it acquired
//   <kind> <target> hold <key> <lease>   claim one key with that lease, report 'claimed', then wait to be killed
//   <kind> <target> complete <count>     claim+complete crash-0.. one by one, reporting each after complete() resolved
// <kind> is sqlite (<target>: the database file, opened with durability 'full'), postgres or
// redis (<target>: the server's URL).

const [kind, target, mode, arg, extra] = process.argv.slice(2)
// Each server test runs on its own keys: KEY_PREFIX is unique per test ('' for SQLite, one file per test).
const prefix = process.env.KEY_PREFIX ?? ''
const LONG = { leaseMs: 60_000, retentionMs: 3_600_000 }
const exitTimer = setTimeout(() => process.exit(3), 30_000)
const send = (message) => new Promise((resolve) => process.send(message, resolve))
const onServer = kind !== 'sqlite'
const store = await openStore()

async function openStore() {
  if (kind === 'sqlite') {
    const { SqliteDedupStore } = await import('@email-webhooks/core/sqlite')
    // GENERATION_RECORDS: seal done records into generations that often (sqlite-processes.test.ts).
    const generationRecords = process.env.GENERATION_RECORDS ? Number(process.env.GENERATION_RECORDS) : undefined
    return new SqliteDedupStore({ path: target, durability: 'full', generationRecords })
  }
  if (kind === 'postgres') {
    const { PostgresDedupStore } = await import('@email-webhooks/core/postgres')
    return new PostgresDedupStore({ connectionString: target })
  }
  if (kind === 'redis') {
    const { RedisDedupStore } = await import('@email-webhooks/core/redis')
    return new RedisDedupStore({ url: target })
  }
  throw new Error(`unknown kind ${kind}`)
}

/** A server store connects (and creates its table) on first use; a SQLite store opened its file already. */
async function warmUp() {
  if (onServer) await store.claim('warm-up', { leaseMs: 1, retentionMs: 1 })
}

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
  // Connect before the start signal, so that no racer starts late.
  await warmUp()
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
    // A short pause between events, as between requests: SQLite's busy wait polls, so a
    // process that writes back to back would otherwise starve the others out of the race.
    if (!onServer) await new Promise((resolve) => setTimeout(resolve, 0))
  }
  await store.close()
  await send({ type: 'result', acquired, duplicate, inFlight })
  clearTimeout(exitTimer)
  process.disconnect()
} else if (mode === 'hold') {
  await warmUp()
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
