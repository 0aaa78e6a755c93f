/**
 * `sender --to <receiver-url>`: a local stand-in for the email service, to rehearse an outage and
 * its recovery on one machine. It delivers email lifecycles to the receiver as the contract says
 * (the testing kit's faithful sender), serves the management API and the email reads on
 * 127.0.0.1 for `endpoint …` and `emails reconcile`, and takes controls (fail, disable, enable,
 * status, pause, quit) as keys on a terminal or lines on stdin. Runs until `quit`, Ctrl-C or SIGTERM.
 */
import { appendFileSync, writeFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { SENDER_DISABLE_AFTER } from '@email-webhooks/core/testing'
import { Command, Option } from 'commander'
import { type CommandFactory, examples, type RunState, withJson, withSecretOptions } from '../lib/common.js'
import { EXIT, plainMessage, UsageError } from '../lib/errors.js'
import { checkUrl } from '../lib/http.js'
import { decimalNumber, wholeNumber } from '../lib/input.js'
import { Lifecycles } from '../lib/lifecycles.js'
import { LocalSender } from '../lib/local-sender.js'
import { createOutput } from '../lib/output.js'
import { findSecret } from '../lib/secret.js'
import { readControls, type SenderControl } from '../lib/sender-input.js'
import { CONTROLS_HELP, createSenderPrinter, type SenderPrinter } from '../lib/sender-output.js'

/** The port of the examples in the docs. */
const DEFAULT_PORT = 4000

interface SenderOptions {
  to: string
  port: number
  rate: number
  emails: number
  ids?: string
  timeScale: number
  secret?: string
  envFile?: string
  json?: boolean
  input: boolean
}

/** Emission on a timer: a tick per 1/rate s, paused and resumed on request, stopped once every email is out. */
class Emission {
  readonly #lifecycles: Lifecycles
  readonly #everyMs: number
  readonly #tick: (emission: Emission) => void
  #timer: ReturnType<typeof setInterval> | undefined
  paused = false

  constructor(lifecycles: Lifecycles, rate: number, tick: (emission: Emission) => void) {
    this.#lifecycles = lifecycles
    this.#everyMs = Math.max(10, Math.round(1000 / rate))
    this.#tick = tick
  }

  get state(): string {
    if (this.#lifecycles.done) return 'done'
    return this.paused ? 'paused' : 'on'
  }

  start(): void {
    if (this.#lifecycles.done) return
    this.#tick(this)
    this.#timer = setInterval(() => {
      if (!this.paused) this.#tick(this)
    }, this.#everyMs)
  }

  stop(): void {
    clearInterval(this.#timer)
    this.#timer = undefined
  }
}

/** Waits for `quit`, SIGINT or SIGTERM. */
function untilStopped(quit: Promise<void>): Promise<void> {
  return new Promise((done) => {
    const stop = (): void => {
      process.off('SIGINT', stop)
      process.off('SIGTERM', stop)
      done()
    }
    process.on('SIGINT', stop)
    process.on('SIGTERM', stop)
    void quit.then(stop)
  })
}

async function startSender(o: SenderOptions, secret: string | undefined, printer: SenderPrinter): Promise<LocalSender> {
  try {
    return await LocalSender.start({ to: o.to, port: o.port, secret, timeScale: o.timeScale }, printer)
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    if (code === 'EADDRINUSE' || code === 'EACCES')
      throw new UsageError(`Cannot listen on 127.0.0.1:${o.port} (${code}): give another port with --port (0 for any free one).`)
    throw error
  }
}

/** Runs one control other than `quit`. */
async function control(
  which: SenderControl,
  local: LocalSender,
  emission: Emission,
  printer: SenderPrinter,
  mode: 'keys' | 'lines',
): Promise<void> {
  if (which === 'fail') {
    local.setFailing(!local.failing)
    const text = local.failing
      ? 'fail mode on: attempts fail before they reach the receiver, as if it were down, and count toward disabling the endpoint.'
      : 'fail mode off: attempts reach the receiver again.'
    printer.note('fail_mode', text, { on: local.failing })
  } else if (which === 'pause') {
    emission.paused = !emission.paused
    printer.note('emitting', `emitting ${emission.state}.`, { state: emission.state })
  } else if (which === 'disable' || which === 'enable') {
    const status = await local.setEnabled(which === 'enable')
    if (status !== 200) printer.note('error', `the PATCH answered ${status}.`, { status })
  } else if (which === 'status') printer.status(local.status(), emission.state)
  else if (which === 'help') printer.note('help', CONTROLS_HELP[mode])
}

async function runSender(state: RunState, o: SenderOptions): Promise<void> {
  checkUrl(o.to)
  const out = createOutput(o.json === true)
  const printer = createSenderPrinter(out, SENDER_DISABLE_AFTER)
  const ids = o.ids === undefined ? undefined : resolve(o.ids)
  if (ids !== undefined) {
    try {
      writeFileSync(ids, '')
    } catch (error) {
      throw new UsageError(`Cannot write the ids file ${ids}: ${(error as NodeJS.ErrnoException).code ?? 'unknown error'}.`)
    }
  }
  const given = findSecret(o)
  const local = await startSender(o, given?.value, printer)
  const lifecycles = new Lifecycles(o.emails)
  const emission = new Emission(lifecycles, o.rate, (self) => {
    const planned = lifecycles.tick((id) => ids !== undefined && appendFileSync(ids, `${id}\n`))
    for (const p of planned) local.emit(p.type, p.emailId, p.emailNumber)
    if (!lifecycles.done) return
    self.stop()
    const { events } = local.status()
    printer.note(
      'emitted_all',
      `all ${lifecycles.started} emails emitted (${events} events). The sender keeps delivering, retrying and serving the API until you quit.`,
      { emails: lifecycles.started, events },
    )
  })
  let quit = (): void => {}
  const quitting = new Promise<void>((done) => {
    quit = done
  })
  let mode: 'keys' | 'lines' = 'lines'
  const onControl = (which: SenderControl | undefined, text: string): void => {
    if (which === undefined) printer.note('unknown_control', `"${text}" is not a control. ${CONTROLS_HELP[mode]}`)
    else if (which === 'quit') quit()
    else
      control(which, local, emission, printer, mode).catch((error: unknown) =>
        printer.note('error', `${which} failed: ${plainMessage(error)}`, { control: which, message: plainMessage(error) }),
      )
  }
  const input = o.input ? readControls(onControl) : undefined
  mode = input?.mode ?? 'lines'
  const secretSource = given?.source
  printer.ready({
    url: local.apiUrl.replace(/\/v1$/, ''),
    apiUrl: local.apiUrl,
    apiKey: local.apiKey,
    endpointId: local.endpointId,
    to: o.to,
    generatedSecret: secretSource === undefined ? local.secret : undefined,
    secretSource,
    emails: o.emails,
    rate: o.rate,
    ids,
    input: input?.mode ?? 'none',
    disableAfter: SENDER_DISABLE_AFTER,
  })
  emission.start()
  await untilStopped(quitting)
  emission.stop()
  input?.stop()
  printer.status(local.status(), emission.state)
  printer.note('stopped', 'stopped: the endpoint, its deliveries and the emails went with this process.')
  await local.close()
  state.exitCode = EXIT.ok
}

/**
 * Builds the `sender` command.
 * @param state Where the command leaves its exit code.
 * @example
 * program.addCommand(senderCommand(state))
 */
export const senderCommand: CommandFactory = (state) => {
  const command = new Command('sender')
    .description(
      'a local stand-in for the email service, to rehearse an outage and its recovery: delivers email lifecycles to your receiver as the contract says, serves the management API and the email reads on 127.0.0.1 (for endpoint recover and emails reconcile), and fails, disables or re-enables the endpoint on request',
    )
    .requiredOption('--to <url>', 'your receiver, e.g. http://localhost:3000/hooks')
    .addOption(
      new Option('--port <n>', 'port of the API on 127.0.0.1 (0: any free one)').argParser(wholeNumber(0, 65_535)).default(DEFAULT_PORT),
    )
    .addOption(new Option('--rate <n>', 'new emails per second (0.01–100)').argParser(decimalNumber(0.01, 100)).default(1))
    .addOption(new Option('--emails <n>', 'emails to emit in all (0–100000; 0: serve only)').argParser(wholeNumber(0, 100_000)).default(20))
    .option('--ids <file>', 'write each email id to this file (for emails reconcile --ids); written anew')
    .addOption(
      new Option('--time-scale <x>', "multiplies the backoff waits (1: the contract's 5 s doubling; 0.01 for a quick run)")
        .argParser(decimalNumber(0.0001, 1))
        .default(1),
    )
    .option('--no-input', 'read no controls from stdin (e.g. when it runs in the background)')
  withSecretOptions(command)
  withJson(command)
  command.addHelpText(
    'after',
    `${examples([
      'email-webhooks sender --to http://localhost:3000/hooks --ids ids.txt',
      'EMAIL_WEBHOOK_SECRET=whsec_try_it email-webhooks sender --port 4000 --to http://localhost:3000/hooks --emails 30 --rate 2',
    ])}\nThe secret: --secret, EMAIL_WEBHOOK_SECRET or .env (your receiver's; never printed), else a throwaway one made and printed.\nWith --json, one JSON object per line (kind: ready, attempt, emitted, endpoint, api, status, …).\n`,
  )
  return command.action((o: SenderOptions) => runSender(state, o))
}
