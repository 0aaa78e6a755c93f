import type { ChildProcess } from 'node:child_process'

/** What a child process wrote so far on stdout and stderr. */
export interface Gathered {
  stdout(): string
  stderr(): string
}

/** Gathers a child's stdout and stderr (piped) as they come. */
export function gather(child: ChildProcess): Gathered {
  let stdout = ''
  let stderr = ''
  child.stdout?.on('data', (chunk: Buffer) => {
    stdout += chunk.toString()
  })
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString()
  })
  return { stdout: () => stdout, stderr: () => stderr }
}
