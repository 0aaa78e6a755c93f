// An inbox worker process for inbox-processes.test.ts. It talks to the parent over IPC (fork) and
// exits by itself after 30 s at most, so a failed test never leaves it running.
//   <kind> <url> <name> drain <ordered 0|1>  wait for 'go', then take (60 s leases), hold each entry
//                                             a moment and finish it, until the inbox has nothing
//                                             pending or running; report each take
//   <kind> <url> <name> hold <lease ms>       take one entry with that lease, report it, wait to be killed
// <kind> is postgres or redis; <name> is the store's table (PostgreSQL) or key prefix (Redis).

const [kind, url, name, mode, arg] = process.argv.slice(2)
const LONG = { leaseMs: 60_000, retentionMs: 3_600_000 }
const exitTimer = setTimeout(() => process.exit(3), 30_000)
const send = (message) => new Promise((resolve) => process.send(message, resolve))
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))
const microsNow = () => Number(process.hrtime.bigint() / 1000n)
const store = await openStore()

async function openStore() {
  if (kind === 'postgres') {
    const { PostgresDedupStore } = await import('@email-webhooks/core/postgres')
    return new PostgresDedupStore({ connectionString: url, table: name })
  }
  if (kind === 'redis') {
    const { RedisDedupStore } = await import('@email-webhooks/core/redis')
    return new RedisDedupStore({ url, prefix: name })
  }
  throw new Error(`unknown kind ${kind}`)
}

if (mode === 'drain') {
  const ordered = arg === '1'
  // Connect (and find the table) before the start signal, so that no worker starts late.
  await store.inbox.stats()
  await send({ type: 'ready' })
  await new Promise((resolve) => process.once('message', resolve))
  const takes = []
  for (;;) {
    const lease = await store.inbox.take({ leaseMs: LONG.leaseMs, ordered })
    if (!lease) {
      const { pending, running } = await store.inbox.stats()
      if (pending === 0 && running === 0) break
      await sleep(2)
      continue
    }
    // The machine's monotonic clock in µs (the same in every process): Date.now()'s milliseconds
    // gave two takes of one email, a finish apart, the same time when all of it took under 1 ms,
    // and the test then sorted them by their process's place instead (seen once: 1003, 1005, 1004).
    const takenAt = microsNow()
    await sleep(1)
    const finishingAt = microsNow()
    const finished = await store.inbox.finish(lease, LONG)
    takes.push({
      key: lease.key,
      attempt: lease.attempt,
      orderKey: lease.item.orderKey,
      createdAtMs: lease.item.createdAtMs,
      takenAt,
      finishingAt,
      finished,
    })
  }
  await store.close()
  await send({ type: 'drained', takes })
  clearTimeout(exitTimer)
  process.disconnect()
} else if (mode === 'hold') {
  await store.inbox.stats()
  const before = Date.now()
  const lease = await store.inbox.take({ leaseMs: Number(arg), ordered: false })
  const after = Date.now()
  await send({ type: 'taken', key: lease?.key, attempt: lease?.attempt, before, after })
} else {
  throw new Error(`unknown mode ${mode}`)
}
