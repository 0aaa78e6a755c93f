/**
 * `send --count`: distinct signed deliveries (some repeating an earlier webhook-id) with C in
 * flight, bounded by count and time, stopped cleanly by Ctrl-C. Progress on a TTY only.
 */
import { EMAIL_EVENT_TYPES, signWebhook } from '@email-webhooks/core'
import cliProgress from 'cli-progress'
import { EXIT } from './errors.js'
import { generateEvent } from './event-data.js'
import { type Expectation, meets, SENDER_SUCCESS } from './expect.js'
import { type Answer, post } from './http.js'
import type { Output } from './output.js'
import { printSummary, type Summary, summarize } from './summary.js'
import type { LoadOptions, Tally } from './tally.js'

export type { LoadOptions, Tally } from './tally.js'

/** Repeats are drawn from the most recent deliveries only, so memory stays bounded at any --count. */
const REPEAT_POOL = 10_000

interface Sent {
  id: string
  body: string
}

function record(tally: Tally, answer: Answer, overlapped: boolean, expect: Expectation): void {
  if (answer.status === undefined) tally.noAnswer++
  else {
    tally.answered.push(answer.status)
    tally.latencies.push(answer.latencyMs)
    if (answer.status === 409) tally.conflicts++
    if (answer.status >= 200 && answer.status < 300) tally.successes++
  }
  // Two copies of one event in flight together: 409 is the right answer to the one claimed second
  // (the sender retries it).
  if (!meets(answer.status, expect) && !(overlapped && answer.status === 409)) tally.wrong++
}

function progressBar(out: Output, total: number): cliProgress.SingleBar | undefined {
  if (!out.interactive) return undefined
  const bar = new cliProgress.SingleBar(
    {
      format: ' {bar} {percentage}% | {value}/{total} | {rps} req/s | non-2xx {bad}',
      stream: process.stderr,
      hideCursor: true,
      clearOnComplete: true,
    },
    cliProgress.Presets.shades_classic,
  )
  bar.start(total, 0, { rps: '0', bad: 0 })
  return bar
}

/**
 * Runs a load and prints its summary.
 * @param url The receiver.
 * @param secret The endpoint secret (already validated).
 * @param options Count, concurrency, duplicates, duration cap, timeout, type, expectation.
 * @param out Where to print.
 * @returns The exit code: 0 all as expected, 1 some not, 3 none answered, 130 interrupted.
 * @example
 * process.exitCode = await runLoad(url, secret, { count: 100, concurrency: 10, ... }, out)
 */
export async function runLoad(url: string, secret: string, options: LoadOptions, out: Output): Promise<number> {
  const expect = options.expect ?? SENDER_SUCCESS
  const tally: Tally = { answered: [], latencies: [], conflicts: 0, noAnswer: 0, wrong: 0, duplicatesSent: 0, successes: 0 }
  const sent: Sent[] = []
  const abort = new AbortController()
  const run: { stoppedBy: Summary['stoppedBy'] } = { stoppedBy: 'count' }
  let next = 0
  const stop = (reason: Summary['stoppedBy']): void => {
    if (next < options.count && run.stoppedBy === 'count') run.stoppedBy = reason
    next = options.count
  }
  // First Ctrl-C: start nothing new, let the requests in flight answer (bounded by --timeout).
  // A second one aborts them too.
  let interrupts = 0
  const onSigint = (): void => {
    interrupts++
    stop('interrupted')
    if (interrupts > 1) abort.abort()
  }
  process.on('SIGINT', onSigint)
  const deadline = setTimeout(() => stop('duration'), options.durationSeconds * 1000)
  const started = performance.now()
  const bar = progressBar(out, options.count)

  const inFlight = new Map<string, { count: number; met: boolean }>()
  async function worker(): Promise<void> {
    while (next < options.count) {
      const index = next++
      const repeat = sent.length > 0 && Math.random() * 100 < options.duplicatePercent
      let delivery: Sent
      if (repeat) {
        delivery = sent[Math.floor(Math.random() * sent.length)] as Sent
        tally.duplicatesSent++
      } else {
        const type = options.typeGiven ? options.type : (EMAIL_EVENT_TYPES[index % EMAIL_EVENT_TYPES.length] as string)
        const event = generateEvent(type, options.emailId ?? crypto.randomUUID(), options.createdAt)
        delivery = { id: event.id, body: JSON.stringify(event) }
        if (sent.length < REPEAT_POOL) sent.push(delivery)
        else sent[index % REPEAT_POOL] = delivery
      }
      // Each attempt is signed when it leaves, with a fresh timestamp, as the sender does.
      const signed = await signWebhook({ secret, body: delivery.body, id: delivery.id })
      // Copies of one id in flight together: either may get 409 (the first one to be claimed
      // wins), whichever of them is the repeat.
      const copies = inFlight.get(delivery.id) ?? { count: 0, met: false }
      copies.count++
      if (copies.count > 1) copies.met = true
      inFlight.set(delivery.id, copies)
      const answer = await post(url, signed, { timeoutMs: options.timeoutMs, signal: abort.signal })
      if (--copies.count === 0) inFlight.delete(delivery.id)
      if (answer.failure === 'aborted') break
      record(tally, answer, copies.met, expect)
      if (bar) {
        const seconds = (performance.now() - started) / 1000
        const done = tally.answered.length + tally.noAnswer
        bar.update(done, { rps: (done / seconds).toFixed(0), bad: done - tally.successes })
      }
    }
  }

  try {
    await Promise.all(Array.from({ length: Math.min(options.concurrency, options.count) }, worker))
  } finally {
    clearTimeout(deadline)
    process.removeListener('SIGINT', onSigint)
    bar?.stop()
  }
  const summary = summarize(tally, performance.now() - started, run.stoppedBy, options)
  printSummary(summary, out)
  // Unlike send/replay's exitCodeOf: a load can be interrupted (130), and it is unreachable (3) only when nothing answered.
  if (run.stoppedBy === 'interrupted') return EXIT.interrupted
  if (tally.wrong === 0) return EXIT.ok
  return tally.answered.length === 0 ? EXIT.unreachable : EXIT.unexpected
}
