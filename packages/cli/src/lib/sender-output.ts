/**
 * What `email-webhooks sender` prints: the lines to paste (the API's URL, the throwaway key, the
 * endpoint and its secret when it made one), a line per attempt, per event emitted while the
 * endpoint is disabled, per endpoint change and per API request, and the status on request. With
 * `--json`, one JSON object per line (`kind` says which). Only the throwaway key and secret this
 * process made are ever printed; a secret the user gave is named by its source.
 */
import type { SenderAttempt } from '@email-webhooks/core/testing'
import type { EmittedEvent, LocalSenderStatus } from './local-sender.js'
import { type Output, withoutCredentials } from './output.js'

/** What the ready lines say. */
export interface ReadyInfo {
  url: string
  apiUrl: string
  apiKey: string
  endpointId: string
  to: string
  /** The secret when this process made it (printed), else undefined. */
  generatedSecret: string | undefined
  /** Where the secret came from, when the user gave it. */
  secretSource: string | undefined
  emails: number
  rate: number
  ids: string | undefined
  /** How commands are read: keys on a terminal, lines on a pipe, or not at all. */
  input: 'keys' | 'lines' | 'none'
  disableAfter: number
}

/** Every line the command prints. */
export interface SenderPrinter {
  ready(info: ReadyInfo): void
  attempt(attempt: SenderAttempt, event: EmittedEvent | undefined, state: { failures: number; onPurpose: boolean }): void
  /** Every event with `--json`; in text, only those emitted while the endpoint is disabled (the others get an attempt line). */
  emitted(event: EmittedEvent, recorded: boolean): void
  endpoint(state: { enabled: boolean; failures: number }): void
  api(request: { method: string; path: string; status: number }): void
  /** A short line: a control's effect, or why a command was not understood. */
  note(kind: string, text: string, fields?: Record<string, unknown>): void
  status(status: LocalSenderStatus, emitting: string): void
}

const time = (): string => new Date().toISOString().slice(11, 19)

/** Keys on a terminal; the same words, or their first letters, one per line on a pipe. */
export const CONTROLS_HELP: Record<'keys' | 'lines', string> = {
  keys: 'Keys: f fail deliveries (as if the receiver were down; f again to stop) · d disable · e enable · s status · p pause emitting · q quit',
  lines:
    'Commands on stdin, one per line: fail (as if the receiver were down; again to stop), disable, enable, status, pause, quit (or their first letters).',
}

function answerText(attempt: SenderAttempt, onPurpose: boolean): string {
  if (attempt.ok) return String(attempt.status)
  if (onPurpose) return 'failed on purpose (fail mode: not sent)'
  if (attempt.status === 0) return `no answer (${attempt.failure ?? 'network'})`
  return attempt.failure === 'redirect' ? `${attempt.status} (a redirect: not followed, a failure)` : String(attempt.status)
}

function statusText(s: LocalSenderStatus, emitting: string, disableAfter: number): string {
  const { delivered, scheduled, stopped } = s.deliveries
  return [
    `endpoint ${s.enabled ? 'enabled' : 'disabled'}, failures in a row ${s.failures} (disabled at ${disableAfter})`,
    `${s.emails} emails, ${s.events} events (${s.withoutRecord} emitted while disabled: no delivery record)`,
    `deliveries: ${delivered} delivered, ${scheduled} with an attempt scheduled, ${stopped} stopped (not delivered, nothing scheduled: recover retries them)`,
    `fail mode ${s.failMode ? 'on' : 'off'}; emitting ${emitting}`,
  ].join('; ')
}

function readyLines(info: ReadyInfo, out: Output): string[] {
  const { colors } = out
  const secret =
    info.generatedSecret === undefined
      ? `  signed with the secret from ${info.secretSource}: your receiver verifies with the same one.`
      : `  export EMAIL_WEBHOOK_SECRET=${info.generatedSecret}   ${colors.dim('# a throwaway secret made now for this local endpoint: start your receiver with it')}`
  const ids = info.ids === undefined ? '' : `; their ids go to ${info.ids} (for emails reconcile --ids)`
  const emitting =
    info.emails === 0
      ? 'Emitting nothing (--emails 0): serving the API only.'
      : `Emitting ${info.emails} emails, ${info.rate} new ${info.rate === 1 ? 'email' : 'emails'} a second (queued, submitted, then accepted or bounced)${ids}.`
  return [
    `Local sender on ${info.url}, for rehearsals on this machine: the testing kit's faithful sender, delivering as the service's contract says (10 s timeout, no redirects, retries with backoff from 5 s over 10 attempts, the endpoint disabled after ${info.disableAfter} failures in a row). Nothing it prints is a real credential.`,
    '',
    'For the API commands (email-webhooks endpoint …, emails reconcile), in another terminal:',
    `  export EMAIL_API_URL=${info.apiUrl}`,
    `  export EMAIL_API_KEY=${info.apiKey}   ${colors.dim('# a throwaway key made now, valid only while this sender runs (scopes webhooks:manage, emails:read)')}`,
    '',
    `Endpoint ${info.endpointId} → ${info.to}`,
    secret,
    '',
    emitting,
    ...(info.input === 'none' ? [] : [CONTROLS_HELP[info.input]]),
  ]
}

/**
 * The printer of one run: text lines, or JSON lines with `--json`.
 * @param out Where to print (its `json` decides the form).
 * @param disableAfter The sender's disable threshold, for the messages.
 * @example
 * const printer = createSenderPrinter(createOutput(false), 10)
 */
export function createSenderPrinter(out: Output, disableAfter: number): SenderPrinter {
  const json = (value: Record<string, unknown>): void => void process.stdout.write(`${withoutCredentials(JSON.stringify(value))}\n`)
  const line = (text: string): void => out.line(`${out.colors.dim(time())}  ${text}`)
  let to = ''
  let ids: string | undefined
  let endpointId = ''
  return {
    ready(info) {
      to = info.to
      ids = info.ids
      endpointId = info.endpointId
      if (out.json) {
        const { generatedSecret, ...rest } = info
        return json({ kind: 'ready', ...rest, ...(generatedSecret === undefined ? {} : { secret: generatedSecret }) })
      }
      for (const text of readyLines(info, out)) out.line(text)
    },
    attempt(attempt, event, { failures, onPurpose }) {
      if (out.json) {
        const { signature: _signature, timestamp: _timestamp, ...fields } = attempt
        return json({ kind: 'attempt', ...fields, type: event?.type, emailId: event?.emailId, failures, onPurpose })
      }
      const mark = attempt.ok ? out.colors.green('✓') : out.colors.red('✗')
      const about = event ? `${event.type} ${attempt.eventId} (email ${event.emailNumber})` : attempt.eventId
      const count = attempt.ok ? '' : `  · failures in a row: ${failures} of ${disableAfter}`
      line(`${mark} ${answerText(attempt, onPurpose)}  ${about}  attempt ${attempt.attempt}${attempt.repeat ? ' (repeat)' : ''}${count}`)
    },
    emitted(event, recorded) {
      if (out.json) return json({ kind: 'emitted', ...event, recorded })
      if (recorded) return
      line(`– ${event.type} ${event.eventId} (email ${event.emailNumber}): emitted while the endpoint is disabled, no delivery record`)
    },
    endpoint({ enabled, failures }) {
      if (out.json) return json({ kind: 'endpoint', enabled, failures })
      if (enabled) {
        line(out.colors.green('endpoint enabled again: its failures are reset to 0 and its paused deliveries resume.'))
        return
      }
      const extra =
        failures > disableAfter
          ? ` (${failures} counted: attempts already on their way when it was disabled failed too)`
          : failures < disableAfter
            ? ' (by request)'
            : ''
      const reconcile = `email-webhooks emails reconcile ${to}${ids === undefined ? ' --ids <file of email ids>' : ` --ids ${ids}`}`
      line(
        out.colors.red(
          `endpoint disabled${failures >= disableAfter ? ` after ${disableAfter} failures in a row` : ''}${extra}. Events emitted from now get no delivery record (the contract delivers to enabled endpoints); deliveries waiting for a retry pause. Fix the receiver, then: email-webhooks endpoint recover ${endpointId} (re-enables it, retries what was not delivered), then ${reconcile} (brings the events emitted while it was disabled).`,
        ),
      )
    },
    api({ method, path, status }) {
      if (out.json) return json({ kind: 'api', method, path, status })
      line(`API ${method} ${path} → ${status}`)
    },
    note(kind, text, fields = {}) {
      if (out.json) return json({ kind, ...fields })
      line(text)
    },
    status(status, emitting) {
      if (out.json) return json({ kind: 'status', ...status, emitting })
      line(`status: ${statusText(status, emitting, disableAfter)}`)
    },
  }
}
