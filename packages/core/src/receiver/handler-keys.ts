/**
 * Handler maps whose misspelt keys fail to compile with the "did you mean" the runtime gives: the
 * entry points infer the keys given (`K`), and a key that is not an email event type must be a
 * string literal type that says so, with the types it likely meant, which no handler is. The
 * suggestion is the type whose name starts with the key (`email.bounce` → `email.bounced`), else with
 * the longest start the key shares with one (`email.recipient_acepted` → `email.recipient_accepted`),
 * after lowering its case and adding a missing `email.` (`bounced` → `email.bounced`).
 */
import type { EmailEventType } from '../events.js'
import type { EmailEventHandler, EmailEventHandlers } from './types.js'

/** `S` without its last character. */
type DropLast<S extends string, Kept extends string = ''> = S extends `${infer C}${infer Rest}`
  ? Rest extends ''
    ? Kept
    : DropLast<Rest, `${Kept}${C}`>
  : Kept

/** The email event types that start with the longest start of `P` that any of them has, past `email.`. */
type Nearest<P extends string> = P extends 'email.' | 'email' | ''
  ? never
  : [Extract<EmailEventType, `${P}${string}`>] extends [never]
    ? Nearest<DropLast<P>>
    : Extract<EmailEventType, `${P}${string}`>

/** The email event types a key that is not one likely meant (none when nothing is near). */
export type NearestEmailEventTypes<K extends string> =
  Lowercase<K> extends EmailEventType
    ? Lowercase<K>
    : Lowercase<K> extends `email_${infer Rest}`
      ? Nearest<`email.${Rest}`>
      : Lowercase<K> extends `email.${string}`
        ? Nearest<Lowercase<K>>
        : Nearest<`email.${Lowercase<K>}`>

/**
 * What a handler under a key that is not an email event type must be: a sentence no function is,
 * so the compiler's error says what is wrong and what was likely meant, e.g.
 * `'email.bounce' is not an email event type. Did you mean 'email.bounced'?`.
 */
export type UnknownHandlerKey<K extends string> = [NearestEmailEventTypes<K>] extends [never]
  ? `'${K}' is not an email event type: use one of EMAIL_EVENT_TYPES, or onUnknown for other types`
  : `'${K}' is not an email event type. Did you mean '${NearestEmailEventTypes<K>}'?`

/**
 * Handlers under the keys `K` an entry point inferred: each email event type gets its typed
 * handler; any other key gets {@link UnknownHandlerKey}, which fails to compile with a suggestion.
 * A map typed `EmailEventHandlers` (or with a `string` index) is accepted as before.
 */
export type CheckedEmailEventHandlers<K extends string, Ctx> = {
  [P in K]?: P extends EmailEventType ? EmailEventHandler<P, Ctx> : string extends P ? unknown : UnknownHandlerKey<P>
} & EmailEventHandlers<Ctx>
