/**
 * Turns one run's figures into the console table, the list of issue-16 targets with met / not
 * met, and the Markdown of bench/RESULTS.md. Nothing here measures.
 */
import { formatMicros, formatRatio } from './harness.js'
import { AGREEMENT, BARE_LABELS } from './http.js'

export function table(header, rows) {
  return [`| ${header.join(' | ')} |`, `| ${header.map(() => '---').join(' | ')} |`, ...rows.map((row) => `| ${row.join(' | ')} |`)].join(
    '\n',
  )
}

const ms = (us) => `${(us / 1000).toFixed(2)} ms`
const us = (value) => `${value.toFixed(1)} µs`
const signedUs = (value) => `${value >= 0 ? '+' : '−'}${Math.abs(value).toFixed(1)} µs`
const rate = (value) => Math.round(value).toLocaleString('en-US')
const pct = (share) => (share === undefined ? '?' : `${Math.round(share * 100)} %`)
const verdict = (met) => (met ? 'met' : '**not met**')

function crossCell(row) {
  if (!row.cross) return 'not run'
  const bound = row.cross.loadBound ? '; autocannon ≥ 80 % busy: load-bound' : ''
  return `${formatRatio(row.cross.ratio)}, ${signedUs(row.cross.cpuOverBareUs)} (${row.cross.agree ? 'agrees' : '**disagrees**'}${bound})`
}

/** One row per HTTP variant: the figures issue 16 asks for. */
export function httpRows(summaries) {
  return summaries.map((row) => [
    row.label,
    `${rate(row.bare.perSecond)} → ${rate(row.ours.perSecond)}`,
    formatRatio(row.ratio),
    `${ms(row.bare.p50Us)} / ${ms(row.ours.p50Us)}`,
    `${ms(row.bare.p99Us)} / ${ms(row.ours.p99Us)}`,
    formatRatio(row.p99Ratio),
    `${us(row.bare.cpuUs)} / ${us(row.ours.cpuUs)}`,
    signedUs(row.cpuOverBareUs),
    crossCell(row),
    pct(row.othersMax),
    `${row.non2xx} / ${row.errors}${row.flaggedRounds ? ` (**${row.flaggedRounds} rounds flagged**)` : ''}${row.storeProblem ? ` **${row.storeProblem}**` : ''}`,
  ])
}

export const HTTP_HEADER = [
  'Variant (vs its bare framework)',
  'req/s bare → ours',
  'ratio',
  'p50 bare / ours',
  'p99 bare / ours',
  'p99 ratio',
  'server CPU/req bare / ours',
  'CPU over bare',
  `autocannon cross-check: ratio, CPU over bare`,
  'others on server core (max)',
  'non-2xx / errors',
]

/** Every round as measured, for the record. */
export function roundRows(summaries) {
  const rows = []
  for (const row of summaries) {
    const all = [
      ...row.pairs.flatMap((pair, i) => [
        [`${i + 1}`, pair.bare, 'bare'],
        [`${i + 1}`, pair.variant, 'ours'],
      ]),
    ]
    if (row.crossPairs) all.push(['cross', row.crossPairs.bare, 'bare'], ['cross', row.crossPairs.variant, 'ours'])
    for (const [round, r, side] of all) {
      rows.push([
        row.id,
        round,
        side,
        r.tool,
        rate(r.requests),
        rate(r.perSecond),
        ms(r.p50Us),
        ms(r.p99Us),
        us(r.cpuPerRequestUs),
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
  'Requests',
  'req/s',
  'p50',
  'p99',
  'CPU/req',
  'Server CPU (of a core)',
  'Load CPU (of a core)',
  'Others on server core',
  'non-2xx / errors',
]

function httpTarget(row, name, measured, met) {
  if (!row) return [name, 'not measured', 'not measured', '']
  const invalid = row.non2xx > 0 || row.errors > 0 || row.storeProblem
  return [name, measured, invalid ? '**invalid: errors in its rounds**' : verdict(met), crossCell(row)]
}

/** The targets of issue 16, each with its figure and met / not met. */
export function targets(verifyRows, summaries) {
  const rows = []
  const find = (id) => summaries.find((row) => row.id === id)
  for (const framework of ['express', 'hono']) {
    const name = framework === 'express' ? 'Express 5' : 'Hono'
    const memory = find(`${framework}-memory`)
    const sqlite = find(`${framework}-sqlite`)
    const dup = find(`${framework}-sqlite-dup`)
    rows.push(httpTarget(memory, `${name} + memory store ≥ 0.85× bare`, memory && formatRatio(memory.ratio), memory?.ratio >= 0.85))
    rows.push(
      httpTarget(
        memory,
        `${name} + memory store ≤ 25 µs CPU/request over bare`,
        memory && signedUs(memory.cpuOverBareUs),
        memory?.cpuOverBareUs <= 25,
      ),
    )
    const goal = framework === 'express' ? 0.8 : 0.7
    const stretch = framework === 'hono' && sqlite ? ` (stretch 0.8×: ${sqlite.ratio >= 0.8 ? 'met' : 'not met'})` : ''
    rows.push(
      httpTarget(
        sqlite,
        `${name} + durable SQLite ≥ ${goal}× bare`,
        sqlite && `${formatRatio(sqlite.ratio)}${stretch}`,
        sqlite?.ratio >= goal,
      ),
    )
    rows.push(
      httpTarget(
        sqlite,
        `${name} + durable SQLite p99 ≤ 2× bare`,
        sqlite && `${ms(sqlite.ours.p99Us)} vs ${ms(sqlite.bare.p99Us)} (${formatRatio(sqlite.p99Ratio)})`,
        sqlite?.p99Ratio <= 2,
      ),
    )
    const overMemory = sqlite && memory ? sqlite.ours.cpuUs - memory.ours.cpuUs : undefined
    rows.push(
      httpTarget(
        sqlite && memory ? sqlite : undefined,
        `${name} + durable SQLite ≤ 40 µs CPU/request over the memory store`,
        overMemory !== undefined && `${signedUs(overMemory)} (${us(sqlite.ours.cpuUs)} vs ${us(memory.ours.cpuUs)})`,
        overMemory <= 40,
      ),
    )
    rows.push(httpTarget(dup, `${name} + SQLite, 50 % duplicates ≥ 0.9× bare`, dup && formatRatio(dup.ratio), dup?.ratio >= 0.9))
  }
  for (const size of ['300 B', '2 KB', '64 KB']) {
    const ours = verifyRows?.find((row) => row.size === size && row.name === 'verifyWebhook')
    rows.push(
      ours
        ? [`verifyWebhook ≤ 1.2× hand-written node:crypto at ${size}`, formatRatio(ours.vsHand), verdict(ours.vsHand <= 1.2), '']
        : [`verifyWebhook ≤ 1.2× hand-written node:crypto at ${size}`, 'not measured', 'not measured', ''],
    )
  }
  return rows
}

/** The Markdown of bench/RESULTS.md. */
export function resultsMarkdown({ title, header, method, targetRows, verify, stores, storeSection, summaries, smoke, noisy }) {
  const parts = [`# ${title}`, '']
  if (smoke) parts.push('> Smoke run: durations far too short for real figures.', '')
  parts.push(header, '', '## Method', '', method, '', '## Targets (issue 16)', '')
  if (noisy)
    parts.push("> Other processes used the server's core during this run: these verdicts are not reliable. Rerun on a quiet machine.", '')
  parts.push(table(['Target', 'Measured', 'Result', 'Cross-check (autocannon)'], targetRows), '')
  const handAt = (size, name) => verify?.rows.find((r) => r.size === size && r.name === name)?.nsPerOp
  const stripeLimits = ['300 B', '2 KB']
    .filter((size) => handAt(size, 'stripe'))
    .map((size) => `${formatRatio(handAt(size, 'stripe') / handAt(size, 'hand-written'))} at ${size}`)
  parts.push(
    'Dropped: "≥ 1.5× faster than stripe\'s signature check". Both compute one HMAC-SHA256 over the same bytes, so the',
    'hand-written `node:crypto` baseline bounds any verifier: a verifier with zero overhead would be faster than stripe',
    `only by stripe's own ratio to that baseline${stripeLimits.length ? ` (this run: ${stripeLimits.join(', ')})` : ''}. \`verifyWebhook\` is held to`,
    '≤ 1.2× of the baseline instead (above); the peer-library rows below stay as information.',
    '',
    'Targets not met: where the time goes, step by step, and what limits each one: [profile/README.md](profile/README.md).',
    '',
  )
  if (summaries.length > 0) {
    parts.push('## HTTP', '', table(HTTP_HEADER, httpRows(summaries)), '')
    parts.push('Every round:', '', table(ROUND_HEADER, roundRows(summaries)), '')
  }
  if (verify) {
    parts.push('## Verification (median µs per call, cases interleaved in rounds; ratio to the hand-written node:crypto baseline)', '')
    parts.push(
      'Each library verifies its own signature format over the same body bytes. standardwebhooks, svix and',
      "stripe's `constructEvent` also parse the JSON; `verifyWebhook + parseEnvelope` is the like-for-like row.",
      '',
    )
    parts.push(
      table(
        ['Body', 'Implementation', 'Time', 'vs hand-written'],
        verify.rows.map((r) => [r.size, r.name, formatMicros(r.nsPerOp), formatRatio(r.vsHand)]),
      ),
      '',
    )
    parts.push('Peer libraries (information): how many times slower than `verifyWebhook`', '')
    const sizes = [...new Set(verify.rows.map((r) => r.size))]
    const at = (size, name) => verify.rows.find((r) => r.size === size && r.name === name)?.nsPerOp
    parts.push(
      table(
        ['Peer', ...sizes],
        ['standardwebhooks', 'svix', 'stripe'].map((peer) => [
          peer,
          ...sizes.map((s) => formatRatio(at(s, peer) / at(s, 'verifyWebhook'))),
        ]),
      ),
      '',
    )
    parts.push(
      'Refusals (2 KB body):',
      '',
      table(
        ['Case', 'Time'],
        verify.reject.map((r) => [r.name, formatMicros(r.nsPerOp)]),
      ),
      '',
    )
  }
  if (stores) parts.push(storeSection, '')
  return `${parts.join('\n')}\n`
}

export { AGREEMENT, BARE_LABELS }
