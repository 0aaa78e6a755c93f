/**
 * Turns one run's HTTP figures into tables: one row per variant against its baselines, every
 * round, and the targets (DESIGN.md's performance budget, issue 34) with met / not met. The other
 * sections and the whole of bench/RESULTS.md: report-sections.js. Nothing here measures.
 */
import { formatRatio } from './harness.js'
import { AGREEMENT, BASELINE_LABELS } from './http.js'
import { isHand, serviceOf } from './variants.js'

export function table(header, rows) {
  return [`| ${header.join(' | ')} |`, `| ${header.map(() => '---').join(' | ')} |`, ...rows.map((row) => `| ${row.join(' | ')} |`)].join(
    '\n',
  )
}

export const ms = (us) => `${(us / 1000).toFixed(2)} ms`
export const us = (value) => (value === undefined ? '—' : `${value.toFixed(1)} µs`)
export const signedUs = (value) => `${value >= 0 ? '+' : '−'}${Math.abs(value).toFixed(1)} µs`
export const rate = (value) => Math.round(value).toLocaleString('en-US')
export const pct = (share) => (share === undefined ? '?' : `${Math.round(share * 100)} %`)
const verdict = (met) => (met ? 'met' : '**not met**')

function crossCell(row) {
  if (!row.cross) return 'not run'
  const bound = row.cross.loadBound ? '; autocannon ≥ 80 % busy: load-bound' : ''
  return `${formatRatio(row.cross.ratio)}, ${signedUs(row.cross.cpuOverUs)} (${row.cross.agree ? 'agrees' : '**disagrees**'}${bound})`
}

function troubleCell(row) {
  const flagged = row.flaggedRounds ? ` (**${row.flaggedRounds} rounds flagged**)` : ''
  return `${row.non2xx} / ${row.errors}${flagged}${row.storeProblem ? ` **${row.storeProblem}**` : ''}`
}

/** One row per HTTP variant: ours against its main baseline, then against the bare framework. */
export function httpRows(summaries) {
  return summaries.map((row) => {
    const main = row.main
    const db = main.dbCpuUs !== undefined ? `${us(main.dbCpuUs)} / ${us(row.ours.dbCpuUs)}` : '—'
    const info = row.info ? `${formatRatio(row.info.ratio)}, ${signedUs(row.info.cpuOverUs)} (bare ${rate(row.info.perSecond)} req/s)` : '—'
    return [
      row.label,
      `${main.label}${row.connections !== 10 ? `, ${row.connections} connections` : ''}`,
      `${rate(main.perSecond)} → ${rate(row.ours.perSecond)}`,
      formatRatio(main.ratio),
      `${ms(main.p50Us)} / ${ms(row.ours.p50Us)}`,
      `${ms(main.p99Us)} / ${ms(row.ours.p99Us)}`,
      `${us(main.cpuUs)} / ${us(row.ours.cpuUs)}`,
      formatRatio(main.cpuRatio),
      db,
      info,
      crossCell(row),
      pct(row.othersMax),
      troubleCell(row),
    ]
  })
}

export const HTTP_HEADER = [
  'Variant',
  'Main baseline',
  'req/s baseline → ours',
  'ratio',
  'p50 baseline / ours',
  'p99 baseline / ours',
  'server CPU/req baseline / ours',
  'CPU ratio',
  'DB server CPU/req baseline / ours',
  'vs bare framework: ratio, CPU over bare',
  'autocannon cross-check: ratio, CPU over baseline',
  'others on server core (max)',
  'non-2xx / errors',
]

/** Every round as measured, for the record. */
export function roundRows(summaries) {
  const rows = []
  for (const row of summaries) {
    const all = row.pairs.flatMap((pair, i) =>
      ['info', 'main', 'variant'].filter((side) => pair[side]).map((side) => [`${i + 1}`, pair[side], side]),
    )
    if (row.crossPairs) all.push(['cross', row.crossPairs.main, 'main'], ['cross', row.crossPairs.variant, 'variant'])
    for (const [round, r, side] of all) {
      const server = side === 'variant' ? `ours (${row.mode})` : (row[side]?.mode ?? side)
      rows.push([
        row.id,
        round,
        server,
        r.tool,
        String(r.connections ?? 10),
        rate(r.requests),
        rate(r.perSecond),
        ms(r.p50Us),
        ms(r.p99Us),
        us(r.cpuPerRequestUs),
        us(r.dbCpuPerRequestUs),
        `${Math.round(r.serverBusy * 100)} %`,
        `${Math.round(r.loadBusy * 100)} %`,
        pct(r.others),
        `${r.non2xx} / ${r.errors}${r.poolExhausted ? ' (pool used up: round cut short)' : ''}`,
      ])
    }
  }
  return rows
}

export const ROUND_HEADER = [
  'Variant',
  'Round',
  'Server',
  'Load',
  'Conns',
  'Requests',
  'req/s',
  'p50',
  'p99',
  'CPU/req',
  'DB CPU/req',
  'Server CPU (of a core)',
  'Load CPU (of a core)',
  'Others on server core',
  'non-2xx / errors',
]

function httpTarget(row, name, measured, met) {
  const invalid = row.non2xx > 0 || row.errors > 0 || row.storeProblem
  return [name, measured, invalid ? '**invalid: errors in its rounds**' : verdict(met), crossCell(row)]
}

/**
 * The targets: DESIGN.md's performance budget as issue 34 sets it. Every variant measured against
 * a hand-written receiver: req/s ≥ 0.9× it (durable SQLite: ≥ 0.95×); every durable one also CPU
 * per event ≤ 1.25× it (PostgreSQL and Redis: receiver and database server together). And
 * verifyWebhook ≤ 1.2× the hand-written node:crypto check.
 */
export function targets(verifyRows, summaries) {
  const rows = []
  for (const row of summaries.filter((s) => isHand(s.main.mode))) {
    const durable = row.mode !== 'memory'
    const goal = row.mode === 'sqlite' ? 0.95 : 0.9
    rows.push(httpTarget(row, `${row.label}: req/s ≥ ${goal}× hand-written`, formatRatio(row.main.ratio), row.main.ratio >= goal))
    if (!durable) continue
    const withDb = serviceOf(row.mode) !== undefined && row.main.dbCpuUs !== undefined
    const cpu = withDb ? row.main.totalCpuRatio : row.main.cpuRatio
    const oursCpu = row.ours.cpuUs + (withDb ? row.ours.dbCpuUs : 0)
    const handCpu = row.main.cpuUs + (withDb ? row.main.dbCpuUs : 0)
    rows.push(
      httpTarget(
        row,
        `${row.label}: CPU per event ≤ 1.25× hand-written${withDb ? ' (receiver + database server)' : ''}`,
        `${formatRatio(cpu)} (${us(oursCpu)} vs ${us(handCpu)})`,
        cpu <= 1.25,
      ),
    )
  }
  for (const size of ['300 B', '2 KB', '64 KB']) {
    const ours = verifyRows?.find((row) => row.size === size && row.name === 'verifyWebhook')
    const name = `verifyWebhook ≤ 1.2× hand-written node:crypto at ${size}`
    rows.push(ours ? [name, formatRatio(ours.vsHand), verdict(ours.vsHand <= 1.2), ''] : [name, 'not measured', 'not measured', ''])
  }
  return rows
}

export { AGREEMENT, BASELINE_LABELS }
