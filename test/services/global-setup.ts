/**
 * vitest's global setup: one PostgreSQL and one Redis for the whole run, which test files share
 * through sharedPostgres() and sharedRedis() (a database each), stopped when the run ends. When
 * one cannot start (not installed), nothing is provided: the files that need it then fail, each
 * with startPostgres()'s or startRedis()'s message on what to install, and the others run.
 */
import type { TestProject } from 'vitest/node'
import { type RunningServer, SHARED_REDIS_DATABASES, startPostgres, startRedis } from './servers.js'

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const [postgres, redis] = await Promise.allSettled([
    startPostgres({ maxConnections: 800 }),
    startRedis({ args: ['--databases', String(SHARED_REDIS_DATABASES)] }),
  ])
  const started: RunningServer[] = []
  if (postgres.status === 'fulfilled') {
    project.provide('sharedPostgresUrl', postgres.value.url)
    started.push(postgres.value)
  }
  if (redis.status === 'fulfilled') {
    project.provide('sharedRedisUrl', redis.value.url)
    started.push(redis.value)
  }
  return async () => {
    await Promise.all(started.map((server) => server.stop()))
  }
}
