/**
 * The sections of bench/RESULTS.md that a script of its own writes (console pages, serverless
 * stores, the inbox backlog): its section replaced where it is, or added at the end. A full
 * `npx -y pnpm@12 bench` run rewrites the file without them: run those scripts again after one.
 */
import { readFileSync, writeFileSync } from 'node:fs'

/**
 * Writes `section` (Markdown that starts with `heading`) into `file`: in place of the section that
 * starts with that heading (up to the next `## ` heading), or at the end.
 * @param file The results file.
 * @param heading The section's first line, e.g. `## Console pages (issue 45)`.
 * @param section The whole section, heading included.
 */
export function writeSection(file, heading, section) {
  let text = ''
  try {
    text = readFileSync(file, 'utf8')
  } catch {}
  const start = text.indexOf(heading)
  if (start >= 0) {
    const end = text.indexOf('\n## ', start + 1)
    text = `${text.slice(0, start)}${section}${end >= 0 ? text.slice(end + 1) : ''}`
  } else text = `${text.trimEnd()}\n\n${section}`
  writeFileSync(file, text.endsWith('\n') ? text : `${text}\n`)
}

/**
 * Prints a script's section (its lines joined) on stdout and, when `file` is given, writes it there
 * in place (`writeSection`), saying so on stderr. Returns the section.
 * @param lines The section's lines, its heading first.
 * @param file The results file, or undefined to print only.
 * @param heading The section's first line.
 */
export function emitSection(lines, file, heading) {
  const section = lines.join('\n')
  process.stdout.write(`${section}\n`)
  if (file) {
    writeSection(file, heading, section)
    process.stderr.write(`wrote ${file}\n`)
  }
  return section
}

/**
 * The command-line options of a bench script, `--name value` (or a bare `--flag`: `'true'`).
 * @param argv The arguments after the script's path.
 */
export function parseArgs(argv) {
  return Object.fromEntries(
    argv.flatMap((arg, i, all) =>
      arg.startsWith('--') ? [[arg.slice(2), all[i + 1]?.startsWith('--') ? 'true' : (all[i + 1] ?? 'true')]] : [],
    ),
  )
}
