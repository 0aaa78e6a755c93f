/**
 * How the store changes its tables while other stores may be writing them: under the store's
 * advisory lock, and only when what it came to make is still missing once the lock is held.
 *
 * Two stores that open at once (a deploy starting several instances) both find a table, an index,
 * a column or the stamp missing; the second gets the lock only after the first has made them and
 * begun claiming. Its `CREATE INDEX IF NOT EXISTS` and `ALTER TABLE … ADD COLUMN IF NOT EXISTS`
 * would still lock the table they name (PostgreSQL takes that lock before it looks for the name):
 * behind the first store's open transactions, and against a claim that writes two of the tables, a
 * deadlock (40P01) that failed those claims. So the check is made again inside the locked
 * transaction (PL/pgSQL, present in every PostgreSQL database since 9.0), and the DDL runs only
 * when it still finds something to do.
 */

/**
 * `ddl` under the advisory lock of `table`, run only when `when` (a PL/pgSQL condition, evaluated
 * once the lock is held) is true. One multi-statement query, so one implicit transaction (no BEGIN:
 * see OrderTables.ensure).
 * @param table The store's table name (the lock's key).
 * @param when The condition, e.g. `to_regclass('t_inbox') IS NULL`.
 * @param ddl The statements, each ending with `;`.
 * @param before PL/pgSQL statements that set the variables `when` reads (declared in `declare`).
 * @param declare Declarations of those variables.
 * @example
 * await query(lockedDdl('email_webhook_dedup', "to_regclass('email_webhook_dedup_inbox') IS NULL", inboxSql))
 */
export function lockedDdl(table: string, when: string, ddl: string, before = '', declare = ''): string {
  return `SELECT pg_advisory_xact_lock(hashtext('email-webhooks:${table}'));
DO $email_webhooks$${declare ? ` DECLARE ${declare}` : ''} BEGIN
${before}${before ? '\n' : ''}IF ${when} THEN
${ddl}
END IF;
END $email_webhooks$;`
}

/**
 * The PL/pgSQL condition that any of `names` (tables or indexes, as the store names them) is missing.
 * @param names The relation names.
 * @example
 * anyMissing(['t_order', 't_order_lock']) // "to_regclass('t_order') IS NULL OR to_regclass('t_order_lock') IS NULL"
 */
export function anyMissing(names: readonly string[]): string {
  return names.map((name) => `to_regclass('${name}') IS NULL`).join(' OR ')
}
