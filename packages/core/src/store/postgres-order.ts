/**
 * The ordering capability of `PostgresDedupStore`: its mark table (`<table>_order`) and the
 * statements that read a mark with a claim and advance it with a complete, each ONE statement
 * (data-modifying CTEs), so the mark moves in the same transaction as the completion. Event ids
 * compare with `COLLATE "C"` (byte order, as `compareOrderPositions`), whatever the database's locale.
 */
import type { OrderMark } from '../ordering/position.js'
import type { StoreOrderInput } from './types.js'

/** The SQL that creates the mark table of `table` and its expiry index. */
export function postgresOrderTableSql(table: string): string {
  return `CREATE TABLE IF NOT EXISTS ${table}_order (
  key text COLLATE "C" PRIMARY KEY,
  created_at_ms bigint NOT NULL,
  event_id text COLLATE "C" NOT NULL,
  type text NOT NULL,
  expires_at timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS ${table}_order_exp ON ${table}_order (expires_at);
`
}

/** The statements of the capability; `claimSql` and `completeSql` are the store's plain statements. */
export interface PostgresOrderSql {
  /** Parameters: the claim's three, then the mark key. Returns the claim's row and, when it acquired, the live mark's columns (null when none). */
  claim: string
  /** Parameters: the complete's three, then key, created_at ms, event id and type of the mark. Returns `n` = 1 when completed. */
  complete: string
  purge: string
}

/**
 * Builds the statements for `table`; `claimSteps` are the store's claim CTEs (`cur`, the live row
 * that holds the key, and `ins`, the lease taken), `expiresIn(param)` the SQL of now + `param` ms
 * on the server's clock, `purge` the store's batch delete of expired marks.
 */
export function postgresOrderSql(table: string, claimSteps: string, expiresIn: (param: string) => string, purge: string): PostgresOrderSql {
  const newer = 'm.expires_at <= clock_timestamp() OR (excluded.created_at_ms, excluded.event_id) > (m.created_at_ms, m.event_id)'
  return {
    // float8: pg returns bigint as text; created_at ms are safe integers, exact in a double.
    claim: `WITH ${claimSteps}
SELECT ins.attempt, cur.done, cur.left_ms, m.created_at_ms::float8 AS created_at_ms, m.event_id, m.type
FROM (SELECT 1) AS one LEFT JOIN ins ON true LEFT JOIN cur ON true
LEFT JOIN ${table}_order m ON ins.attempt IS NOT NULL AND m.key = $4 AND m.expires_at > clock_timestamp()`,
    complete: `WITH durable AS (SELECT set_config('synchronous_commit', 'on', true)),
done AS (
  UPDATE ${table} SET done = true, token = NULL, expires_at = ${expiresIn('$3')}
  FROM durable WHERE key = $1 AND token = $2 AND NOT done RETURNING 1),
mark AS (
  INSERT INTO ${table}_order AS m (key, created_at_ms, event_id, type, expires_at)
  SELECT $4, $5, $6, $7, ${expiresIn('$3')} FROM done
  ON CONFLICT (key) DO UPDATE SET
    created_at_ms = CASE WHEN ${newer} THEN excluded.created_at_ms ELSE m.created_at_ms END,
    event_id = CASE WHEN ${newer} THEN excluded.event_id ELSE m.event_id END,
    type = CASE WHEN ${newer} THEN excluded.type ELSE m.type END,
    expires_at = excluded.expires_at)
SELECT count(*)::int AS n FROM done`,
    purge,
  }
}

/** The parameters the complete statement adds for `order`. */
export function orderParams(order: StoreOrderInput): unknown[] {
  return [order.key, order.mark.createdAtMs, order.mark.eventId, order.mark.type]
}

/** The mark in a claim row, or null when the join found none. */
export function markOfRow(row: { created_at_ms: number | null; event_id: string | null; type: string | null }): OrderMark | null {
  if (row.created_at_ms === null || row.event_id === null || row.type === null) return null
  return { createdAtMs: Number(row.created_at_ms), eventId: row.event_id, type: row.type }
}
