/** What `recoverEndpoint` reports: a type of its own, shared by the recovery and its aborted error. */
import type { AlreadyHandledReason, RecoveryItem, SenderNextAttempt } from './recover-plan.js'

/** What `recoverEndpoint` did (or, with `dryRun`, would do; or, in a `RecoveryAbortedError`, did before the abort). */
export interface RecoveryReport {
  endpointId: string
  dryRun: boolean
  /** True in the report of an aborted recovery. */
  aborted: boolean
  /**
   * `already`: it was enabled; `reenabled`: PATCHed now; `would_reenable`: dry run on a disabled endpoint;
   * `interrupted`: aborted while the PATCH was in flight (it may or may not have taken effect).
   */
  enable: 'already' | 'reenabled' | 'would_reenable' | 'interrupted'
  /** Request id of the PATCH, when one was answered. */
  enableRequestId: string | undefined
  /** Request id of the deliveries list; undefined only when the recovery was aborted before the list came. */
  listRequestId: string | undefined
  /** True when the list held the service's maximum (100): older deliveries may exist that it does not show, and a new run lists the same ones. */
  listMayBeTruncated: boolean
  /**
   * Requeued (or, in a dry run, would be), oldest first as started: every listed event neither
   * delivered (a 2xx `last_status`) nor handled (the store), whatever the record's `state` says.
   * `senderNext` when the record shows an attempt of the sender's own still to come (`attempts`
   * below 10, `next_attempt_at` ahead): the receiver answers the later of the two as a duplicate.
   */
  retried: Array<RecoveryItem & { senderNext?: SenderNextAttempt }>
  alreadyHandled: Array<RecoveryItem & { reason: AlreadyHandledReason }>
  /** 404 `delivery_expired`: the payload is gone; these events cannot be recovered through the sender. */
  expired: RecoveryItem[]
  failed: Array<RecoveryItem & { status: number; code: string; message: string }>
  /** Aborted: to be retried, but never sent. */
  notStarted: RecoveryItem[]
  /** Aborted while the retry was in flight: the service may have requeued it. */
  interrupted: RecoveryItem[]
}
