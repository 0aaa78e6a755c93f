/**
 * The figures of one scenario, measured from outside the receivers: handler runs from their
 * journal (fsync'd appends, so a kill -9 loses none), the sender's answers from its side, and
 * what the store holds afterwards (`lookup`). One line per scenario, and the table of them all.
 */
import { appendFileSync, readFileSync } from 'node:fs'
import type { DedupKeyState } from '@email-webhooks/core'
import type { Answer, Run } from './run.js'

/** `FAULTS_LONG=1` (npm run chaos): longer faults, more traffic. */
export const LONG = process.env.FAULTS_LONG === '1'

/** Receiver log lines that say a handler may run a second time, or that the receiver gave up recording an event. */
export const SECOND_RUN_LOG = /could not record|gave up recording/

/** Handler runs of one event: the tags of the processes where a run began, and where one ended (its work done), with when (ms since the epoch). */
export interface Runs {
  begun: string[]
  ended: string[]
  endedAt: number[]
}

export function readJournal(path: string): Map<string, Runs> {
  const runs = new Map<string, Runs>()
  let text = ''
  try {
    text = readFileSync(path, 'utf8')
  } catch {}
  for (const line of text.split('\n')) {
    const [kind, tag, id, at] = line.split(' ')
    if (!kind || !tag || !id) continue
    const entry = runs.get(id) ?? { begun: [], ended: [], endedAt: [] }
    if (kind === 'B') entry.begun.push(tag)
    else {
      entry.ended.push(tag)
      entry.endedAt.push(Number(at))
    }
    runs.set(id, entry)
  }
  return runs
}

export interface Figures {
  scenario: string
  /** How the fault was made (and anything else a reader needs to know about this run). */
  method: string
  emitted: number
  /** Emitted while the endpoint was disabled: the sender made no delivery (only reconcile can bring them). */
  notSent: number
  /**
   * Delivered, never handled, and out of recoverEndpoint's reach: the delivery failed (the endpoint
   * was disabled with it pending) and is older than the 100 records the sender's API lists.
   */
  pastList: number
  once: number
  twice: number
  /** Delivered (a delivery record exists) but never handled. */
  lost: number
  /** The sender saw a 2xx for an event whose done record is not in the store afterwards. */
  okWithoutRecord: number
  /** Handled, but the store does not hold it as done afterwards. */
  handledNotRecorded: number
  /** Runs that began and never ended (the process was killed mid-handler). */
  cutOff: number
  p99Ms: number
  maxMs: number
  attempts: number
  /** Receiver log lines that said a handler may run (or ran) a second time, or that recording was given up. */
  secondRunLogs: number
  /** Answers to attempts made while the fault lasted (started and answered between the marks `down` and `up`), by status and code. */
  duringFault: string
  /** Every answer, by status and code. */
  answers: string
  /** Ids of events handled more than once, with the tags of their completed runs and when they ended. */
  doubled: Array<{ id: string; ended: string[]; endedAt: number[] }>
  lostIds: string[]
  okWithoutRecordIds: string[]
}

function percentile(values: number[], p: number): number {
  if (values.length === 0) return 0
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] as number
}

function tally(answers: Answer[]): string {
  const counts = new Map<string, number>()
  for (const a of answers) {
    const key = a.status === 0 ? (a.failure ?? 'no answer') : a.status < 300 ? String(a.status) : `${a.status} ${a.code ?? ''}`.trim()
    counts.set(key, (counts.get(key) ?? 0) + 1)
  }
  return [...counts]
    .sort((a, b) => b[1] - a[1])
    .map(([key, n]) => `${key} ×${n}`)
    .join(', ')
}

/**
 * Measures a settled run. `lookup` asks the store (a fresh connection) what it holds for an event id.
 * The fault window is between the marks `fault` and `fixed` when both exist.
 */
export async function measure(
  run: Run,
  scenario: string,
  method: string,
  journal: string,
  lookup: (eventId: string) => Promise<DedupKeyState>,
  logs: readonly string[] = [],
): Promise<Figures> {
  const runs = readJournal(journal)
  // The records GET /webhooks/{id}/deliveries shows (newest first, at most 100).
  const listed = new Set(
    run.sender
      .deliveries(run.endpointId)
      .slice(0, 100)
      .map((d) => d.event_id),
  )
  const figures: Figures = {
    scenario,
    method,
    emitted: run.emitted.length,
    notSent: 0,
    pastList: 0,
    once: 0,
    twice: 0,
    lost: 0,
    okWithoutRecord: 0,
    handledNotRecorded: 0,
    cutOff: 0,
    p99Ms: Math.round(
      percentile(
        run.answers.map((a) => a.ms),
        99,
      ),
    ),
    maxMs: Math.round(Math.max(0, ...run.answers.map((a) => a.ms))),
    attempts: run.answers.length,
    secondRunLogs: logs.filter((l) => SECOND_RUN_LOG.test(l)).length,
    duringFault: '',
    answers: tally(run.answers),
    doubled: [],
    lostIds: [],
    okWithoutRecordIds: [],
  }
  for (const { id, sent } of run.emitted) {
    const entry = runs.get(id)
    const ended = entry?.ended.length ?? 0
    if (entry && entry.begun.length > entry.ended.length) figures.cutOff += entry.begun.length - entry.ended.length
    if (ended === 0 && !sent) figures.notSent++
    else if (ended === 0 && !listed.has(id)) figures.pastList++
    else if (ended === 0) {
      figures.lost++
      figures.lostIds.push(id)
    } else if (ended === 1) figures.once++
    else {
      figures.twice++
      figures.doubled.push({ id, ended: entry?.ended ?? [], endedAt: entry?.endedAt ?? [] })
    }
  }
  const acknowledged = new Set(run.answers.filter((a) => a.status >= 200 && a.status < 300).map((a) => a.eventId))
  const handled = [...runs].filter(([, entry]) => entry.ended.length > 0).map(([id]) => id)
  const states = new Map<string, DedupKeyState>()
  for (const id of new Set([...acknowledged, ...handled])) states.set(id, await lookup(id))
  for (const id of acknowledged) {
    if (states.get(id) === 'done') continue
    figures.okWithoutRecord++
    figures.okWithoutRecordIds.push(id)
  }
  figures.handledNotRecorded = handled.filter((id) => states.get(id) !== 'done').length
  if (process.env.FAULTS_DUMP) {
    appendFileSync(
      process.env.FAULTS_DUMP,
      `${JSON.stringify({ scenario, marks: Object.fromEntries(run.marks), answers: run.answers.map((a) => [Math.round(a.at), Math.round(a.ms), a.status, a.code ?? a.failure]) })}\n`,
    )
  }
  const from = run.marks.get('down')
  const to = run.marks.get('up')
  if (from !== undefined && to !== undefined)
    figures.duringFault = tally(run.answers.filter((a) => a.at >= from && a.at + a.ms <= to)) || 'none'
  return figures
}

/** The scenario's one line. */
export function line(f: Figures): string {
  return (
    `${f.scenario}: ${f.emitted} emitted, ${f.once} handled once, ${f.twice} handled twice, ${f.lost} lost, ` +
    `${f.okWithoutRecord} 2xx without a record, p99 ${f.p99Ms} ms (max ${f.maxMs} ms, ${f.attempts} attempts)` +
    (f.notSent > 0 ? `, ${f.notSent} not sent (emitted while the endpoint was disabled)` : '') +
    (f.pastList > 0 ? `, ${f.pastList} failed past the 100 listed records (out of recover's reach)` : '') +
    (f.cutOff > 0 ? `, ${f.cutOff} runs cut off by kill -9` : '') +
    (f.secondRunLogs > 0 ? `, ${f.secondRunLogs} log lines of a possible second run` : '') +
    (f.duringFault ? `; during the fault: ${f.duringFault}` : '') +
    ` [${f.method}]`
  )
}

const rows: Figures[] = []

/** Prints the scenario's line, keeps it for the table, and appends it to $FAULTS_FIGURES (npm run chaos) when set. */
export function report(f: Figures): void {
  rows.push(f)
  console.log(line(f))
  const file = process.env.FAULTS_FIGURES
  if (file) {
    const { doubled, lostIds, okWithoutRecordIds, ...summary } = f
    appendFileSync(file, `${JSON.stringify({ ...summary, doubled: doubled.length, lost: lostIds.length })}\n`)
  }
}

/** The Markdown table of figures (as docs/reliability.md shows it). */
export function table(figures: Array<Omit<Figures, 'doubled' | 'lostIds' | 'okWithoutRecordIds'>>): string {
  const head = [
    'scenario',
    'emitted',
    'handled once',
    'handled twice',
    'lost',
    '2xx without a record',
    'not delivered: emitted while disabled / failed past the 100 listed',
    'p99 answer',
    'answers while the fault lasted',
  ]
  const body = figures.map((f) => [
    f.scenario,
    f.emitted,
    f.once,
    f.twice,
    f.lost,
    f.okWithoutRecord,
    `${f.notSent} / ${f.pastList}`,
    `${f.p99Ms} ms`,
    f.duringFault || '–',
  ])
  return [head, head.map(() => '---'), ...body].map((cells) => `| ${cells.join(' | ')} |`).join('\n')
}

/** Prints the table of every scenario this file measured. */
export function printTable(title: string): void {
  if (rows.length > 0) console.log(`\n${title}\n${table(rows)}\n`)
}
