/**
 * The figures of one scenario, measured from outside the receivers: handler runs from their
 * journal (fsync'd appends, so a kill -9 loses none), the sender's answers from its side, and
 * what the store holds afterwards (`lookup`). One line per scenario, and the table of them all.
 */
import { appendFileSync, readFileSync } from 'node:fs'
import type { DedupKeyState } from '@email-webhooks/core'
import type { ReconcileReport } from '@email-webhooks/core/api'
import type { Answer, Run } from './run.js'

/** `FAULTS_LONG=1` (npm run chaos): longer faults, more traffic. */
export const LONG = process.env.FAULTS_LONG === '1'

/** Receiver log lines that say a handler may run a second time, or that the receiver gave up recording an event. */
export const SECOND_RUN_LOG = /could not record|gave up recording/

/**
 * Handler runs of one event id: the tags of the processes where a run began, and where one ended
 * (its work done), with when (ms since the epoch); the email it is of (`data.id`) and where it
 * came from (`ctx.source`: the sender's delivery, or reconcile with its own deterministic id).
 */
export interface Runs {
  begun: string[]
  ended: string[]
  endedAt: number[]
  emailId: string | undefined
  source: string | undefined
}

/**
 * Reads a journal: `B <tag> <event id> <attempt> <email id> <source>` when a run starts and
 * `E <tag> <event id> <ms since the epoch> <email id> <source>` when its work is done.
 */
export function readJournal(path: string): Map<string, Runs> {
  const runs = new Map<string, Runs>()
  let text = ''
  try {
    text = readFileSync(path, 'utf8')
  } catch {}
  for (const line of text.split('\n')) {
    const [kind, tag, id, at, emailId, source] = line.split(' ')
    if (!kind || !tag || !id) continue
    const entry = runs.get(id) ?? { begun: [], ended: [], endedAt: [], emailId: undefined, source: undefined }
    if (emailId && emailId !== '-') entry.emailId = emailId
    if (source) entry.source = source
    if (kind === 'B') entry.begun.push(tag)
    else {
      entry.ended.push(tag)
      entry.endedAt.push(Number(at))
    }
    runs.set(id, entry)
  }
  return runs
}

/** One completed handler run of an email, whichever event id brought it. */
export interface EmailRun {
  eventId: string
  tag: string
  endedAt: number
  source: string | undefined
}

/** The completed runs of each email (`data.id`), oldest first, across the sender's event ids and reconcile's. */
export function runsByEmail(runs: Map<string, Runs>): Map<string, EmailRun[]> {
  const byEmail = new Map<string, EmailRun[]>()
  for (const [eventId, entry] of runs) {
    if (entry.emailId === undefined) continue
    const list = byEmail.get(entry.emailId) ?? []
    entry.ended.forEach((tag, i) => {
      list.push({ eventId, tag, endedAt: entry.endedAt[i] as number, source: entry.source })
    })
    byEmail.set(entry.emailId, list)
  }
  for (const list of byEmail.values()) list.sort((a, b) => a.endedAt - b.endedAt)
  return byEmail
}

export interface Figures {
  scenario: string
  /** How the fault was made (and anything else a reader needs to know about this run). */
  method: string
  /** Events emitted, each of its own email (so an email and its one event are counted alike). */
  emitted: number
  /** Emitted while the endpoint was disabled: the sender made no delivery (only reconcile can bring them). */
  notSent: number
  /**
   * Delivered, never handled through the sender's deliveries, and out of recoverEndpoint's reach:
   * the delivery failed (the endpoint was disabled with it pending) and is older than the 100
   * records the sender's API lists (only reconcile can bring them).
   */
  pastList: number
  /** Handled once, and by reconcile (its own event id): brought back from the email's own event list. */
  reconciled: number
  /** Emails (events) whose handler ran exactly once, through the sender's delivery or reconcile. */
  once: number
  /** Emails whose handler ran more than once, by one event id or across the sender's and reconcile's. */
  twice: number
  /** Delivered and listed (recoverEndpoint can retry it), but never handled through the sender's deliveries. */
  lost: number
  /** Never handled at all, by either path. */
  unhandled: number
  /** The sender (or reconcile) saw a 2xx for an event whose done record is not in the store afterwards. */
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
  /**
   * The longest an email stayed blocked after the fault ended: from the mark `up` to the last 409
   * in_flight answered to an attempt at it begun after `up` (0 when none was).
   */
  blockedAfterMs: number
  /**
   * The longest one email was answered 409 in_flight: from its first such answer to its last (each
   * event here is of an email of its own). A lease begins before its first 409, so a receiver that
   * keeps its leases answers no email 409 for longer than one lease, whenever its claim came.
   */
  longestBlockMs: number
  /** Every answer, by status and code. */
  answers: string
  /** What reconcile did with every email's list: its events by outcome ('not run' when it was not). */
  reconcile: string
  /** Emails reconcile did not finish ('reconciled'), with their status and the outcome of each event that was not handled or a duplicate. */
  reconcileProblems: string[]
  /** Emails handled more than once: the emitted event's id, and the event ids, tags and end times of their completed runs, oldest first. */
  doubled: Array<{ id: string; eventIds: string[]; ended: string[]; endedAt: number[] }>
  lostIds: string[]
  unhandledIds: string[]
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

/** What reconcile did, in a few words: its events by outcome. */
function reconcileSummary(report: ReconcileReport | undefined): string {
  if (!report) return 'not run'
  const parts = Object.entries(report.totals.events)
    .filter(([, n]) => n > 0)
    .map(([outcome, n]) => `${outcome} ×${n}`)
  return parts.join(', ') || 'nothing to send'
}

/** The emails reconcile did not finish, and why. */
function reconcileProblems(report: ReconcileReport | undefined): string[] {
  if (!report) return []
  const problems = report.emails
    .filter((e) => e.status !== 'reconciled')
    .map((e) => {
      const events = e.events.filter((x) => x.outcome !== 'handled' && x.outcome !== 'duplicate')
      const why = events
        .map((x) => `${x.type} ${x.outcome}${x.code ? ` ${x.code}` : ''}${x.outcome === 'failed' && x.message ? ` (${x.message})` : ''}`)
        .join(', ')
      return `${e.emailId}: ${e.status}${e.error ? ` (${e.error.code})` : ''}${why ? `: ${why}` : ''}`
    })
  if (report.stopped) problems.unshift(`stopped by the ${report.stopped.by}: ${report.stopped.status} ${report.stopped.code}`)
  return problems
}

/** `lookup` of every id, a few at a time. */
async function lookupAll(ids: Iterable<string>, lookup: (eventId: string) => Promise<DedupKeyState>): Promise<Map<string, DedupKeyState>> {
  const queue = [...ids]
  const states = new Map<string, DedupKeyState>()
  const worker = async () => {
    for (let id = queue.pop(); id !== undefined; id = queue.pop()) states.set(id, await lookup(id))
  }
  await Promise.all(Array.from({ length: 8 }, worker))
  return states
}

/**
 * The longest an email was answered 409 in_flight after the fault ended: each email here has one
 * event, so from the mark `up` to the last 409 in_flight given to an attempt at it begun after `up`
 * (an upper bound of the time it was held, found by the sender's own retries).
 */
function blockedAfter(run: Run): number {
  const up = run.marks.get('up')
  if (up === undefined) return 0
  let longest = 0
  for (const a of run.answers) if (a.at >= up && a.status === 409 && a.code === 'in_flight') longest = Math.max(longest, a.at - up)
  return Math.round(longest)
}

function longestBlock(run: Run): number {
  const spans = new Map<string, { first: number; last: number }>()
  for (const a of run.answers) {
    if (a.status !== 409 || a.code !== 'in_flight') continue
    const span = spans.get(a.eventId)
    if (span) span.last = Math.max(span.last, a.at)
    else spans.set(a.eventId, { first: a.at, last: a.at })
  }
  let longest = 0
  for (const { first, last } of spans.values()) longest = Math.max(longest, last - first)
  return Math.round(longest)
}

/**
 * Measures a settled run. `lookup` asks the store (a fresh connection) what it holds for an event id.
 * The fault window is between the marks `down` and `up` when both exist. Each emitted event has its
 * own email: its handler runs are counted by email (`data.id` in the journal), whether they came
 * from the sender's delivery (the emitted id) or from reconcile (its own id).
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
  const byEmail = runsByEmail(runs)
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
    reconciled: 0,
    once: 0,
    twice: 0,
    lost: 0,
    unhandled: 0,
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
    blockedAfterMs: blockedAfter(run),
    longestBlockMs: longestBlock(run),
    answers: tally(run.answers),
    reconcile: reconcileSummary(run.reconciliation),
    reconcileProblems: reconcileProblems(run.reconciliation),
    doubled: [],
    lostIds: [],
    unhandledIds: [],
    okWithoutRecordIds: [],
  }
  for (const entry of runs.values()) if (entry.begun.length > entry.ended.length) figures.cutOff += entry.begun.length - entry.ended.length
  for (const { id, emailId, sent } of run.emitted) {
    const ran = byEmail.get(emailId) ?? []
    const bySender = ran.filter((r) => r.eventId === id).length
    if (!sent) figures.notSent++
    else if (bySender === 0 && !listed.has(id)) figures.pastList++
    else if (bySender === 0) {
      figures.lost++
      figures.lostIds.push(id)
    }
    if (ran.length === 0) {
      figures.unhandled++
      figures.unhandledIds.push(id)
    } else if (ran.length === 1) {
      figures.once++
      if (bySender === 0) figures.reconciled++
    } else {
      figures.twice++
      figures.doubled.push({
        id,
        eventIds: ran.map((r) => r.eventId),
        ended: ran.map((r) => r.tag),
        endedAt: ran.map((r) => r.endedAt),
      })
    }
  }
  const ok = (a: Answer) => a.status >= 200 && a.status < 300
  const acknowledged = new Set([...run.answers, ...run.reconcileAnswers].filter(ok).map((a) => a.eventId))
  const handled = [...runs].filter(([, entry]) => entry.ended.length > 0).map(([id]) => id)
  const states = await lookupAll(new Set([...acknowledged, ...handled]), lookup)
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
    `, ${f.reconciled} brought back by reconcile` +
    (f.unhandled > 0 ? `, ${f.unhandled} never handled` : '') +
    (f.cutOff > 0 ? `, ${f.cutOff} runs cut off by kill -9` : '') +
    (f.secondRunLogs > 0 ? `, ${f.secondRunLogs} log lines of a possible second run` : '') +
    (f.duringFault ? `; during the fault: ${f.duringFault}` : '') +
    `; longest an email stayed blocked (409) after the fault ended: ${f.blockedAfterMs} ms (one email's 409s at most ${f.longestBlockMs} ms apart)` +
    `; reconcile: ${f.reconcile}` +
    (f.reconcileProblems.length > 0
      ? ` (${f.reconcileProblems.length} emails not reconciled: ${f.reconcileProblems.slice(0, 3).join('; ')})`
      : '') +
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
    const { doubled, lostIds, unhandledIds, okWithoutRecordIds, reconcileProblems, ...summary } = f
    appendFileSync(
      file,
      `${JSON.stringify({ ...summary, doubled: doubled.length, lost: lostIds.length, reconcileProblems: reconcileProblems.length })}\n`,
    )
  }
}

/** The Markdown table of figures (as docs/reliability.md shows it). */
export function table(
  figures: Array<Omit<Figures, 'doubled' | 'lostIds' | 'unhandledIds' | 'okWithoutRecordIds' | 'reconcileProblems'>>,
): string {
  const head = [
    'scenario',
    'emitted',
    'handled once',
    'handled twice',
    'lost',
    '2xx without a record',
    'brought back by reconcile (emitted while disabled / failed past the 100 listed)',
    'p99 answer',
    'answers while the fault lasted',
    'email blocked after the fault',
  ]
  const body = figures.map((f) => [
    f.scenario,
    f.emitted,
    f.once,
    f.twice,
    f.lost,
    f.okWithoutRecord,
    `${f.reconciled} (${f.notSent} / ${f.pastList})`,
    `${f.p99Ms} ms`,
    f.duringFault || '–',
    `${f.blockedAfterMs} ms`,
  ])
  return [head, head.map(() => '---'), ...body].map((cells) => `| ${cells.join(' | ')} |`).join('\n')
}

/** Prints the table of every scenario this file measured. */
export function printTable(title: string): void {
  if (rows.length > 0) console.log(`\n${title}\n${table(rows)}\n`)
}
