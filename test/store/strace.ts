/** Whether strace can run here; on CI its absence is an error (.ci/run installs it), never a silent skip. */
import { execFileSync, type SpawnSyncReturns, spawnSync } from 'node:child_process'

function hasStrace(): boolean {
  try {
    execFileSync('strace', ['-V'], { stdio: 'ignore' })
    return true
  } catch {
    return false
  }
}

export const straceAvailable: boolean = hasStrace()
if (!straceAvailable && process.env.CI) throw new Error('strace is needed by this test: apt-get install strace (.ci/run installs it).')

/**
 * Runs `node <script> ...args` under strace, which applies `inject` to the `syscalls` that touch
 * `file` (strace -P); SIGKILL after `timeoutMs` (strace then kills the script too).
 */
export function underStrace(
  { file, syscalls, inject, timeoutMs = 60_000 }: { file: string; syscalls: string; inject: string; timeoutMs?: number },
  script: string,
  ...args: string[]
): SpawnSyncReturns<string> {
  return spawnSync('strace', straceArgs({ file, syscalls, inject }, script, ...args), {
    encoding: 'utf8',
    timeout: timeoutMs,
    killSignal: 'SIGKILL',
  })
}

/** strace's arguments for `node <script> ...args` with `inject` applied to the `syscalls` that touch `file`. */
export function straceArgs(
  { file, syscalls, inject }: { file: string; syscalls: string; inject: string },
  script: string,
  ...args: string[]
): string[] {
  return [
    '-f',
    '-qq',
    '-o',
    '/dev/null',
    '-P',
    file,
    '-e',
    `trace=${syscalls}`,
    '-e',
    `inject=${syscalls}:${inject}`,
    process.execPath,
    script,
    ...args,
  ]
}
