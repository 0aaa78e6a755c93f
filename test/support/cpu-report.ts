/**
 * With TEST_CPU_REPORT=<file> (vitest.config.ts adds this setup file then), appends one JSON line
 * per test file to <file>: the CPU seconds its worker process used (user and system) and those of
 * the child processes it waited for, read from /proc/self/stat when the file's tests end. Linux
 * only. Where the time goes is the wall time per file in vitest's JSON report; this says which
 * files spend it computing, and so slow the others down on a machine with few cores.
 */
import { appendFileSync, readFileSync } from 'node:fs'
import { afterAll, expect } from 'vitest'

const TICKS_PER_SECOND = 100
const out = process.env.TEST_CPU_REPORT

function cpuSeconds(): { self: number; children: number } {
  // Fields after the command name (which is in parentheses and may hold spaces): utime is the 14th field of the line.
  const stat = readFileSync('/proc/self/stat', 'utf8')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  const [utime, stime, cutime, cstime] = [11, 12, 13, 14].map((i) => Number(fields[i]) / TICKS_PER_SECOND)
  return { self: (utime ?? 0) + (stime ?? 0), children: (cutime ?? 0) + (cstime ?? 0) }
}

if (out) {
  // Taken as the setup file runs, before the test file is imported: its imports count too.
  const start = cpuSeconds()
  const began = performance.now()
  afterAll(() => {
    const end = cpuSeconds()
    const file = expect.getState().testPath ?? 'unknown'
    appendFileSync(
      out,
      `${JSON.stringify({
        file,
        wallS: Math.round(performance.now() - began) / 1000,
        selfS: Math.round((end.self - start.self) * 100) / 100,
        childrenS: Math.round((end.children - start.children) * 100) / 100,
      })}\n`,
    )
  })
}
