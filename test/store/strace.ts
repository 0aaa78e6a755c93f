/** Whether strace can run here; on CI its absence is an error (.ci/run installs it), never a silent skip. */
import { execFileSync } from 'node:child_process'

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
