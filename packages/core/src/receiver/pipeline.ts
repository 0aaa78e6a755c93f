/** What every step of one receiver shares: its checked options, its store, its one timer and its reporting. */
import type { WebhookHandlingError, WebhookVerificationError } from '../errors.js'
import type { WebhookEvent } from '../events.js'
import { MemoryDedupStore } from '../store/memory/index.js'
import type { ClaimOptions, CompleteOptions } from '../store/types.js'
import { Telemetry } from '../telemetry/index.js'
import type { DeliveryTrace } from '../telemetry/trace.js'
import { outcomeOf, reasonOf } from '../telemetry/trace.js'
import { errorAnswer } from './answers.js'
import { Deadlines } from './deadline.js'
import type { ResolvedOptions } from './options.js'
import { type EventOrdering, plainOrdering } from './order.js'
import { OrderGate } from './order-gate.js'
import { storeName } from './order-options.js'
import { Recorder } from './recorder.js'
import { Reporter } from './report.js'
import type { ErrorInfo, ReceiverResponse } from './types.js'

/** One receiver's shared state, built once by `createReceiver`. */
export interface Pipeline<Ctx> extends ResolvedOptions<Ctx> {
  claimOptions: ClaimOptions
  completeOptions: CompleteOptions
  /** What an event that passes no `order` to the store uses (ordering off, no event, or no usable order). */
  plainOrdering: EventOrdering
  deadlines: Deadlines
  /** Inbox mode: wakes this process's idle worker when an event was just queued (set by the worker). */
  wake: (() => void) | undefined
  /** Events handled whose complete failed, recorded in the background. */
  recorder: Recorder
  /** Ordering on: the order keys held in this process, one event of an email at a time. */
  gate: OrderGate
  /** Ordering on: how long an event waits for another event of its email (half of handlerTimeoutMs). */
  orderWaitMs: number
  /** False for the in-process memory store, which answers before the next tick and cannot hang: no store deadline. */
  storeMayHang: boolean
  reporter: Reporter
  /** OpenTelemetry spans and metrics, when `@opentelemetry/api` is there (or given) and telemetry is not off. */
  telemetry: Telemetry | undefined
  /** Counts a delivery's answer (`stats().deliveries`) and ends its trace. */
  answered(answer: ReceiverResponse, trace: DeliveryTrace | undefined): ReceiverResponse
  /** Who tries a failed event again, for messages: the sender (request mode), or the inbox worker (this pipeline is its). */
  retriedBy: 'sender' | 'inbox worker'
  /** Reports a refusal or failure and returns its answer. */
  fail(error: WebhookVerificationError | WebhookHandlingError, event?: WebhookEvent, retryAfterMs?: number): ReceiverResponse
}

/** Builds the shared state of one receiver (`shared`: the reporter and telemetry of the receiver this pipeline works for, such as its inbox worker's). */
export function createPipeline<Ctx>(
  resolved: ResolvedOptions<Ctx>,
  onError: ((error: WebhookVerificationError | WebhookHandlingError, info: ErrorInfo) => void) | undefined,
  shared?: { reporter: Reporter; telemetry: Telemetry | undefined },
): Pipeline<Ctx> {
  const reporter = shared?.reporter ?? new Reporter(onError, resolved.logger)
  const telemetry =
    shared !== undefined
      ? shared.telemetry
      : resolved.otel &&
        new Telemetry(resolved.otel.api, resolved.otel.option, storeName(resolved.store), resolved.inbox ? 'inbox' : 'request')
  const recorder = new Recorder({ store: resolved.store, reporter, storeTimeoutMs: resolved.storeTimeoutMs, leaseMs: resolved.leaseMs })
  const claimOptions = { leaseMs: resolved.leaseMs, retentionMs: resolved.retentionMs }
  const completeOptions = { retentionMs: resolved.retentionMs }
  return {
    ...resolved,
    claimOptions,
    completeOptions,
    plainOrdering: plainOrdering(claimOptions, completeOptions),
    deadlines: new Deadlines(Math.min(resolved.storeTimeoutMs, resolved.handlerTimeoutMs)),
    recorder,
    wake: undefined,
    gate: new OrderGate(),
    orderWaitMs: Math.floor(resolved.handlerTimeoutMs / 2),
    storeMayHang: !(resolved.store instanceof MemoryDedupStore),
    reporter,
    telemetry,
    retriedBy: 'sender',
    answered(answer, trace) {
      const outcome = outcomeOf(answer)
      reporter.delivered(outcome)
      // Without an SDK nothing is traced nor metered: no outcome to work out.
      if (telemetry !== undefined && (trace !== undefined || telemetry.metering)) {
        const reason = reasonOf(answer)
        telemetry.count(outcome, reason, answer.event?.type)
        trace?.end(answer, outcome, reason)
      }
      return answer
    },
    fail(error, event, retryAfterMs) {
      const info: ErrorInfo = { status: error.status }
      if (event) {
        info.eventId = event.id
        info.type = event.type
      }
      // `this.retriedBy`: the inbox worker's pipeline says its failures as attempts, not as answers.
      reporter.report(error, info, this.retriedBy)
      return errorAnswer(error, event, retryAfterMs)
    },
  }
}
