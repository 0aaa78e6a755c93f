/**
 * The controls of `email-webhooks sender`: single keys when stdin is a terminal (raw mode, so no
 * Enter; Ctrl-C still quits), else one command per line (`fail`, `disable`, …, or their first
 * letters), so a script or a test can drive it through a pipe. The end of a piped stdin changes
 * nothing: the sender runs until `quit`, SIGINT or SIGTERM.
 */
import { createInterface } from 'node:readline'

/** What the user can ask for. */
export type SenderControl = 'fail' | 'disable' | 'enable' | 'status' | 'pause' | 'quit' | 'help'

const CONTROLS: readonly SenderControl[] = ['fail', 'disable', 'enable', 'status', 'pause', 'quit', 'help']
const CTRL_C = '\u0003'

/**
 * The control a key or line names: the word or its first letter (`?` is help), any case; undefined otherwise.
 * @example
 * parseControl('D') // 'disable'
 */
export function parseControl(text: string): SenderControl | undefined {
  const word = text.trim().toLowerCase()
  if (word === '') return undefined
  if (word === '?' || word === CTRL_C) return word === '?' ? 'help' : 'quit'
  return CONTROLS.find((control) => control === word || (word.length === 1 && control.startsWith(word)))
}

/**
 * Reads controls from stdin until the returned function is called.
 * @param onControl Gets each control, or undefined and the text for one it does not know.
 * @returns How input is read (`keys` on a terminal, `lines` otherwise), and the stop function.
 * @example
 * const { stop } = readControls((control) => control === 'quit' && quit())
 */
export function readControls(onControl: (control: SenderControl | undefined, text: string) => void): {
  mode: 'keys' | 'lines'
  stop: () => void
} {
  const stdin = process.stdin
  if (stdin.isTTY) {
    stdin.setRawMode(true)
    stdin.setEncoding('utf8')
    const onData = (chunk: string): void => {
      for (const key of chunk) if (key.trim() !== '') onControl(parseControl(key), key)
    }
    stdin.on('data', onData)
    stdin.resume()
    return {
      mode: 'keys',
      stop() {
        stdin.off('data', onData)
        stdin.setRawMode(false)
        stdin.pause()
      },
    }
  }
  const lines = createInterface({ input: stdin, terminal: false })
  lines.on('line', (line) => {
    if (line.trim() !== '') onControl(parseControl(line), line.trim())
  })
  return {
    mode: 'lines',
    stop() {
      lines.close()
      stdin.destroy()
    },
  }
}
