/**
 * The PostgreSQL 15 and Redis 7 the fault scenarios share (test/services/servers.ts: private
 * servers on free ports, data in temporary folders), started once before the first scenario and
 * stopped after the last.
 */
import { afterAll, beforeAll } from 'vitest'
import { type RunningServer, startPostgresAndRedis } from '../services/servers.js'

export const servers = {} as { postgres: RunningServer; redis: RunningServer }

/** Starts the servers before this file's tests and stops them after. */
export function useServers(): void {
  beforeAll(async () => {
    Object.assign(servers, await startPostgresAndRedis())
  })
  afterAll(async () => {
    await Promise.all([servers.postgres?.stop(), servers.redis?.stop()])
  })
}
