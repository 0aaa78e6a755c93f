/**
 * The email lifecycles `email-webhooks sender` emits: each tick starts a new email (until the count
 * is reached) and moves every email under way one event further, so an email's events come one
 * tick apart, in the order they happen. Most emails are accepted; every fourth bounces; every tenth
 * accepted one is then complained about.
 */

/** What happens to most emails. */
export const ACCEPTED: readonly string[] = ['email.queued', 'email.submitted', 'email.recipient_accepted']
/** Every fourth email. */
export const BOUNCED: readonly string[] = ['email.queued', 'email.submitted', 'email.bounced']
/** Every tenth email (unless it bounced). */
export const COMPLAINED: readonly string[] = [...ACCEPTED, 'email.complained']

/** The lifecycle of the n-th email (1-based). */
export function lifecycleOf(n: number): readonly string[] {
  if (n % 4 === 0) return BOUNCED
  return n % 10 === 0 ? COMPLAINED : ACCEPTED
}

/** One event to emit: its type, its email and that email's number. */
export interface PlannedEmission {
  type: string
  emailId: string
  emailNumber: number
}

interface UnderWay {
  id: string
  number: number
  next: number
  steps: readonly string[]
}

/** The emails of one run and how far each has got. */
export class Lifecycles {
  readonly #total: number
  readonly #underWay: UnderWay[] = []
  #started = 0

  /** @param total How many emails to start (0: none). */
  constructor(total: number) {
    this.#total = total
  }

  /** Emails started so far. */
  get started(): number {
    return this.#started
  }

  /** True once every email was started and emitted its last event. */
  get done(): boolean {
    return this.#started >= this.#total && this.#underWay.length === 0
  }

  /**
   * The events of one tick: the next event of each email under way, oldest email first, then the
   * first event of a new email (whose id `onNewEmail` gets, e.g. to write it to the ids file).
   */
  tick(onNewEmail: (id: string, number: number) => void = () => {}): PlannedEmission[] {
    const out: PlannedEmission[] = []
    for (const email of this.#underWay) {
      out.push({ type: email.steps[email.next] as string, emailId: email.id, emailNumber: email.number })
      email.next++
    }
    if (this.#started < this.#total) {
      this.#started++
      const email: UnderWay = { id: crypto.randomUUID(), number: this.#started, next: 1, steps: lifecycleOf(this.#started) }
      onNewEmail(email.id, email.number)
      out.push({ type: email.steps[0] as string, emailId: email.id, emailNumber: email.number })
      this.#underWay.push(email)
    }
    for (let i = this.#underWay.length - 1; i >= 0; i--) {
      const email = this.#underWay[i] as UnderWay
      if (email.next >= email.steps.length) this.#underWay.splice(i, 1)
    }
    return out
  }
}
