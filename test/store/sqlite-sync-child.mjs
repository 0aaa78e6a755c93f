// Run under strace by sqlite-durability.test.ts, which fails or delays the fdatasync of the WAL.
//   <path> fail   claim+complete one event while every WAL sync fails, then try each method
//   <path> delay  complete an event, then claim it again while the complete's sync is still running
//   <path> inbox-delay  enqueue an inbox entry, then enqueue it again while the first one's sync is still running
//   <path> stuck-close  complete an event, then close() (closeTimeoutMs 300) while the complete's sync is stuck; then SIGKILLs itself
//   <path> idle-close   durability 'normal' (no sync while it works): complete an event, then close() (closeTimeoutMs 300) on a disk whose syncs are stuck; then SIGKILLs itself
//   <path> late-close, idle-late-close  as stuck-close and idle-close, on a disk whose syncs end late (strace's delay):
//          waits (at most 20 s) for the store's warning that the disk answered, and 1 s more, adds each as step 'warning', and exits
// Prints one JSON line: what each step resolved to or rejected with, in the order they settled.
import { SqliteDedupStore } from '@email-webhooks/core/sqlite'

const [path, mode] = process.argv.slice(2)
const LONG = { leaseMs: 60_000, retentionMs: 3_600_000 }
const warnings = []
const store = new SqliteDedupStore({
  path,
  durability: mode.startsWith('idle-') ? 'normal' : 'full',
  ...(mode.endsWith('-close') ? { closeTimeoutMs: 300, warn: (message) => warnings.push(message) } : {}),
})
const settled = []
const outcome = (step, promise) =>
  promise.then(
    (value) => settled.push({ step, value }),
    (error) => settled.push({ step, error: { name: error.name, code: error.code, message: error.message } }),
  )
const turn = () => new Promise((resolve) => setImmediate(resolve))

const first = mode === 'inbox-delay' ? undefined : await store.claim('event-1', LONG)
if (first !== undefined && first.status !== 'acquired') throw new Error(`event-1 was ${first.status}`)
if (mode === 'inbox-delay') {
  const item = { key: 'default:event-1', type: 'email.bounced', payload: '{}', timestamp: 1_767_225_600 }
  const queued = outcome('enqueue', store.inbox.enqueue(item, LONG))
  // Two turns: the enqueue is committed and its sync (delayed by strace) is running.
  await turn()
  await turn()
  await Promise.all([queued, outcome('enqueue again', store.inbox.enqueue(item, LONG))])
} else if (mode === 'fail') {
  await outcome('complete', store.complete(first.claim, LONG))
  await outcome('claim', store.claim('event-2', LONG))
  await outcome('complete again', store.complete(first.claim, LONG))
  await outcome('release', store.release(first.claim))
  await outcome('lookup', store.lookup('event-1'))
} else if (mode === 'delay') {
  const completed = outcome('complete', store.complete(first.claim, LONG))
  // Two turns: the complete is committed and its sync (delayed by strace) is running.
  await turn()
  await turn()
  await Promise.all([completed, outcome('claim again', store.claim('event-1', LONG)), outcome('lookup', store.lookup('event-1'))])
}
if (mode.endsWith('-close')) {
  const completed = outcome('complete', store.complete(first.claim, LONG))
  // Two turns: the complete is committed and, in stuck-close, its sync (held by strace) is running.
  await turn()
  await turn()
  if (mode.startsWith('idle-')) await completed
  const started = performance.now()
  await outcome('close', store.close())
  settled.push({ step: 'close took', value: Math.round(performance.now() - started) })
  await outcome('close again', store.close())
  await outcome('claim after close', store.claim('event-2', LONG))
  await completed
  if (mode.endsWith('late-close')) {
    for (const deadline = Date.now() + 20_000; warnings.length === 0 && Date.now() < deadline; )
      await new Promise((resolve) => setTimeout(resolve, 20))
    // A second warning would come at once (both waits end with the same sync): a second is ample.
    await new Promise((resolve) => setTimeout(resolve, 1_000))
    for (const message of warnings) settled.push({ step: 'warning', value: message })
    process.stdout.write(`${JSON.stringify(settled)}\n`)
    process.exit(0)
  }
  settled.push({ step: 'pid', value: process.pid })
  process.stdout.write(`${JSON.stringify(settled)}\n`)
  // What the error says to do: the stuck sync keeps the process from exiting, process.exit() included.
  process.kill(process.pid, 'SIGKILL')
}
await store.close()
process.stdout.write(`${JSON.stringify(settled)}\n`)
