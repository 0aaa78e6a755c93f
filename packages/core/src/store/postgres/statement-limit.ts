/**
 * The server-side statement limit of the pool `PostgresDedupStore` makes: `statement_timeout`, a
 * tenth under `queryTimeoutMs` (deadline.ts), sent as a startup parameter when a connection opens,
 * so that PostgreSQL rolls back a statement the store is about to give up on (a claim stuck behind a
 * lock would otherwise commit later: a lease nobody holds). Poolers meet it two ways: PgBouncer
 * refuses startup parameters it does not track unless they are in its `ignore_startup_parameters`
 * (the connection is opened again without it, and the pool drops it for good), and drops them
 * silently when they are (the check at open finds no limit). Either way the store says once what
 * that risks and how to set the limit on the role instead. Bundled into the PostgreSQL subpath.
 */
import type { PostgresPoolClient } from './deadline.js'
import { PACKAGE, refusedStatementTimeout } from './errors.js'

/** The server-side statement limit in effect on a connection ('0': none). */
const LIMIT_IN_EFFECT = `SELECT current_setting('statement_timeout') AS setting`

/** What the limit needs of its store. */
export interface StatementLimitHost {
  /** Takes the parameter out of the own pool's options (options.ts); undefined when the store sends none. */
  drop: (() => void) | undefined
  /** The limit the store asks for, ms. */
  ms: number | undefined
  /** A connection string (or PGOPTIONS) of the own pool asks for a limit of its own: checked at open too. */
  ownAsked: boolean
  /** The server in messages, redacted. */
  target: string
  warn: (message: string) => void
  /** Runs a statement with the store's deadlines (a connection of its own, never one held without end). */
  query: (text: string) => Promise<{ rows: unknown[] }>
}

export class StatementLimit {
  readonly #host: StatementLimitHost
  /**
   * 'sent'; 'dropped' since a server refused it; 'stuck' when a connection opened without it was
   * refused all the same (set elsewhere, such as pg.defaults), so connects are no longer tried twice.
   * Undefined when the store sends none (a given pool, or a connection string that sets its own).
   */
  #state: 'sent' | 'dropped' | 'stuck' | undefined
  #said = false
  #checkedAfterRefusal = false

  constructor(host: StatementLimitHost) {
    this.#host = host
    this.#state = host.drop === undefined ? undefined : 'sent'
  }

  /** Whether connections still open with the parameter (connects then go through `open`). */
  get sending(): boolean {
    return this.#state === 'sent'
  }

  /**
   * Opens a connection while the pool sends the parameter. Refused for it, the pool drops it for
   * every connection it opens from then on and this one is opened once more, within the same
   * connect wait and place in the store's lane: no statement was sent on the refused one.
   */
  open(connect: () => Promise<PostgresPoolClient>): Promise<PostgresPoolClient> {
    return connect().catch((error: unknown) => {
      const drop = this.#host.drop
      if (!refusedStatementTimeout(error) || this.#state === 'stuck' || drop === undefined) throw error
      drop()
      if (this.#state === 'sent') this.#state = 'dropped'
      return connect().then(
        (client) => this.#checkAfterRefusal().then(() => client),
        (again: unknown) => {
          // Refused without it too: set somewhere the store does not control (pg.defaults).
          if (refusedStatementTimeout(again)) this.#state = 'stuck'
          throw again
        },
      )
    })
  }

  /**
   * At the store's open: whether the limit the pool asks for (its own, or the connection string's)
   * is in effect, else says so once. Only informative: a check that fails says nothing.
   */
  async checkAtOpen(): Promise<void> {
    if (this.#state !== 'sent' && !this.#host.ownAsked) return
    if ((await this.#setting()) !== '0' || this.#state === 'dropped') return
    this.#say(
      `the store's connections to ${this.#host.target} run without a statement_timeout, though ${this.#host.ownAsked ? 'the connection string asks' : 'its pool asks'} for one when it opens them: something in between drops the parameter (PgBouncer with statement_timeout in its ignore_startup_parameters).`,
    )
  }

  /** The limit in effect on a connection of the store ('0': none), or undefined when the check failed (it only informs). */
  #setting(): Promise<string | undefined> {
    return this.#host.query(LIMIT_IN_EFFECT).then(
      (result) => (result.rows[0] as { setting?: string } | undefined)?.setting,
      () => undefined,
    )
  }

  /**
   * Once a connection opened without the refused parameter: whether a limit is in effect all the
   * same (set on the role, as the warning advises), else says so once. Asked on a connection of its
   * own with the store's deadlines, so a check that hangs ends at them; never fails the call.
   */
  async #checkAfterRefusal(): Promise<void> {
    if (this.#checkedAfterRefusal) return
    this.#checkedAfterRefusal = true
    if ((await this.#setting()) !== '0') return
    this.#say(
      `${this.#host.target} refused the startup parameter statement_timeout ("unsupported startup parameter": PgBouncer refuses those it does not track unless they are in its ignore_startup_parameters), so the store opens its connections without it from now on.`,
    )
  }

  /** Says once that the store's statements run without a server-side limit, what that risks, and how to set one. */
  #say(why: string): void {
    if (this.#said) return
    this.#said = true
    this.#host.warn(
      `${PACKAGE} PostgresDedupStore: ${why} Without a statement_timeout, a statement stuck behind a lock past queryTimeoutMs can still commit after the store gave up on it, and a claim that does holds its event until its lease ends (its retries get 409). To keep the limit, set it for the store's role on the server: ALTER ROLE <role> IN DATABASE <database> SET statement_timeout = '${this.#host.ms}ms' (best on a role only the store uses: it applies to every session of that role there).`,
    )
  }
}
