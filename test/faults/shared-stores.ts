/**
 * The shared stores fail under traffic: PostgreSQL stops for 5 s (pg_ctl stop -m fast, then
 * start), Redis restarts (SIGTERM, then start), and Redis is killed with SIGKILL (AOF with
 * appendfsync always) and started again. The faithful sender keeps delivering meanwhile; once
 * the server is back and the sender has nothing left to try, the endpoint is recovered the
 * documented way. Every event emitted must be handled exactly once (recover, then reconcile), the answers while the
 * store is down must be 503 store_unavailable (or 409 in_flight for a retry of an event whose
 * record is still being tried), and no 2xx may leave without the event's record.
 */
import { PostgresDedupStore } from '@email-webhooks/core/postgres'
import { RedisDedupStore } from '@email-webhooks/core/redis'
import { describe, expect, it } from 'vitest'
import { type FaultLevel, pick } from './level.js'
import { thresholdName } from './run.js'
import { expectExactlyOnce, type OutageResult, runOutage, scratch, unexpectedFaultAnswers } from './scenario.js'
import { servers } from './services.js'

/**
 * Answers to attempts made while the store was down (after the stop completed, before the start
 * began): only 503 store_unavailable, and 409 in_flight for a retry of an event whose record is
 * still being tried; and the log says why.
 */
function expectOutageAnswers(result: OutageResult): void {
  expect(unexpectedFaultAnswers(result.run)).toEqual([])
  expect(result.run.answers.some((a) => a.status === 503 && a.code === 'store_unavailable')).toBe(true)
  expect(result.receiver.logs.some((l) => /503 store_unavailable/.test(l))).toBe(true)
}

/** The shared-store scenarios at `level`: quick stops PostgreSQL with one threshold (the sender's retries carry it), with less traffic. */
export function sharedStoreScenarios(level: FaultLevel): void {
  const EVENTS = pick(level, { quick: 120, full: 360, long: 2_000 })
  const PER_SECOND = pick(level, { quick: 40, full: 40, long: 50 })
  const STOP_MS = pick(level, { quick: 2_000, full: 5_000, long: 20_000 })
  const REDIS_EVENTS = pick(level, { quick: 80, full: 160, long: 1_000 })
  describe('shared stores fail under traffic', () => {
    const file = scratch('servers')
    it.each(
      (
        [
          ['the contract: disabled after 10 failures in a row', 10],
          ['a threshold the outage does not reach (1,000,000), so its retries carry it', 1_000_000],
        ] as Array<[string, number]>
      ).slice(level === 'quick' ? 1 : 0),
    )(
      `PostgreSQL stopped for ${STOP_MS / 1000} s mid-traffic, sender with %s: 503 store_unavailable meanwhile, then every event emitted handled exactly once (recover, then reconcile)`,
      async (_name, disableAfter) => {
        const result = await runOutage({
          scenario: `PostgreSQL stopped ${STOP_MS / 1000} s, ${thresholdName(disableAfter)} (Express)`,
          method: 'pg_ctl stop -m fast, then start',
          adapter: 'express',
          store: { kind: 'postgres', url: servers.postgres.url },
          openStore: () => new PostgresDedupStore({ connectionString: servers.postgres.url }),
          file,
          events: EVENTS,
          perSecond: PER_SECOND,
          faultAtMs: 1_500,
          faultMs: STOP_MS,
          begin: () => servers.postgres.halt('graceful'),
          end: () => servers.postgres.start(),
          run: { disableAfter },
        })
        expectExactlyOnce(result.figures)
        expectOutageAnswers(result)
        if (disableAfter > 10) {
          // Nothing disabled the endpoint: every event was delivered, most of those of the outage by a retry.
          expect(result.figures.notSent).toBe(0)
          expect(
            result.run.answers.filter(
              (a) => a.at >= (result.run.marks.get('down') as number) && a.at <= (result.run.marks.get('up') as number),
            ).length,
          ).toBeGreaterThan((STOP_MS / 1000) * 10)
        }
      },
      180_000,
    )

    it('Redis restarted mid-traffic (SIGTERM, down 2 s): every event handled exactly once', async () => {
      const result = await runOutage({
        scenario: 'Redis restarted, down 2 s (Express)',
        method: 'SIGTERM, start again after 2 s',
        adapter: 'express',
        store: { kind: 'redis', url: servers.redis.url },
        openStore: () => new RedisDedupStore({ url: servers.redis.url }),
        file,
        events: REDIS_EVENTS,
        perSecond: PER_SECOND,
        faultAtMs: 1_000,
        faultMs: 2_000,
        begin: () => servers.redis.halt('graceful'),
        end: () => servers.redis.start(),
      })
      expectExactlyOnce(result.figures)
      expectOutageAnswers(result)
    }, 180_000)

    it('Redis killed -9 mid-traffic (appendfsync always, down 2 s): every event handled exactly once', async () => {
      const result = await runOutage({
        scenario: 'Redis killed -9, down 2 s (Hono)',
        method: 'SIGKILL (appendonly yes, appendfsync always), start again after 2 s',
        adapter: 'hono',
        store: { kind: 'redis', url: servers.redis.url },
        openStore: () => new RedisDedupStore({ url: servers.redis.url }),
        file,
        events: REDIS_EVENTS,
        perSecond: PER_SECOND,
        faultAtMs: 1_000,
        faultMs: 2_000,
        begin: () => servers.redis.halt('crash'),
        end: () => servers.redis.start(),
      })
      expectExactlyOnce(result.figures)
      expectOutageAnswers(result)
    }, 180_000)
  })
}
