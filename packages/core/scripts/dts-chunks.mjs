// After tsup: the declaration bundles share their common types through a hashed chunk
// (`dist/types-<hash>.d.ts`) that they import as `./types-<hash>.js`. TypeScript maps that to the
// .d.ts; Deno looks for the .js itself and fails (`deno check` TS2307). So each such chunk gets a
// tiny empty module beside it that names its types (`@ts-self-types`), and chunks that no entry
// imports any more (tsup does not clean dist/) are removed.
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

const dist = new URL('../dist/', import.meta.url).pathname
const files = readdirSync(dist)
const CHUNK = /^(.+)-[A-Za-z0-9_-]{8}\.d\.(c?)ts$/
const referenced = new Set()
for (const file of files) {
  if (!/\.d\.c?ts$/.test(file) || CHUNK.test(file)) continue
  const text = readFileSync(join(dist, file), 'utf8')
  for (const match of text.matchAll(/from '\.\/([^']+)\.(c?js)'/g)) referenced.add(`${match[1]}.d.${match[2] === 'cjs' ? 'cts' : 'ts'}`)
}
for (const file of files) {
  const match = CHUNK.exec(file)
  if (!match) continue
  const base = file.replace(/\.d\.c?ts$/, '')
  const stub = join(dist, `${base}.${match[2] ? 'cjs' : 'js'}`)
  if (!referenced.has(file)) {
    rmSync(join(dist, file), { force: true })
    rmSync(stub, { force: true })
    continue
  }
  const body = match[2] ? `// @ts-self-types="./${file}"\n'use strict'\n` : `// @ts-self-types="./${file}"\nexport {}\n`
  if (!existsSync(stub) || readFileSync(stub, 'utf8') !== body) writeFileSync(stub, body)
}
