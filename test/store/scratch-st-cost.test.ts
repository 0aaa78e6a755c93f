import { readdirSync, readFileSync } from 'node:fs'
import { it } from 'vitest'
import { PostgresDedupStore } from '../../packages/core/src/store/postgres/index.js'
import { startPostgres } from '../services/servers.js'

function pgCpuTicks(): number {
  let total = 0
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
      const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'))
      if (!comm.startsWith('postgres')) continue
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      total += Number(fields[11]) + Number(fields[12])
    } catch {}
  }
  return total
}

it('statement_timeout cost', async () => {
  const server = await startPostgres()
  const urls = { on: server.url, off: `${server.url}?statement_timeout=0` }
  const stores = {
    on: new PostgresDedupStore({ connectionString: urls.on, table: 'cost_on' }),
    off: new PostgresDedupStore({ connectionString: urls.off, table: 'cost_off' }),
  }
  const opts = { leaseMs: 30000, retentionMs: 3600000 }
  for (const s of Object.values(stores)) await s.claim('warm', opts)
  const results: Record<string, { rate: number; cpu: number }[]> = { on: [], off: [] }
  for (let round = 0; round < 6; round++) {
    for (const name of (round % 2 ? ['off', 'on'] : ['on', 'off']) as ('on' | 'off')[]) {
      const store = stores[name]
      let events = 0
      const end = performance.now() + 3000
      const t0 = pgCpuTicks()
      const lanes = Array.from({ length: 16 }, async () => {
        while (performance.now() < end) {
          const r = await store.claim(crypto.randomUUID(), opts)
          if (r.status === 'acquired') await store.complete(r.claim, opts)
          events++
        }
      })
      const s0 = performance.now()
      await Promise.all(lanes)
      const secs = (performance.now() - s0) / 1000
      const ticks = pgCpuTicks() - t0
      results[name].push({ rate: events / secs, cpu: (ticks * 10000) / events })
    }
  }
  const med = (a: number[]) => a.slice().sort((x, y) => x - y)[Math.floor(a.length / 2)]
  for (const name of ['on', 'off'])
    console.log(
      name,
      'events/s',
      results[name].map((r) => Math.round(r.rate)).join(','),
      'median',
      Math.round(med(results[name].map((r) => r.rate))),
      'DB CPU µs/event',
      results[name].map((r) => r.cpu.toFixed(1)).join(','),
      'median',
      med(results[name].map((r) => r.cpu)).toFixed(1),
    )
  for (const s of Object.values(stores)) await s.close()
  await server.stop()
}, 300000)
