/**
 * Code-level check: every comparison of MACs in packages/core/src is constant time over
 * equal-length decoded bytes. The sources are parsed with the TypeScript compiler and the test
 * fails on `==`/`===`/`!=`/`!==`, `Buffer.compare`, `.equals()` or `.localeCompare()` applied to
 * a signature, MAC, HMAC or digest; and it requires that each crypto backend compares with
 * `timingSafeEqual` or `crypto.subtle.verify` behind a 32-byte length check, and that the
 * verifier hands the backend decoded bytes of a 64-hex signature. The checker is first run on
 * planted bad code, so it is known to catch what it looks for.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'
import { describe, expect, it } from 'vitest'
import { printTable } from './support.js'

const SRC = join(dirname(fileURLToPath(import.meta.url)), '../../packages/core/src')
const MAC_WORD = /^(signature|signatures|sig|mac|macs|hmac|digest|tag)$/i
const EQUALITY = new Set([
  ts.SyntaxKind.EqualsEqualsToken,
  ts.SyntaxKind.EqualsEqualsEqualsToken,
  ts.SyntaxKind.ExclamationEqualsToken,
  ts.SyntaxKind.ExclamationEqualsEqualsToken,
])

/** Non-constant-time comparisons the checker must catch. */
const PLANTED = [
  'if (signature === expected) return true',
  "if (mac.toString('hex') == header) return true",
  'return computedSig !== providedSig',
  'return Buffer.compare(mac, provided) === 0',
  'return expectedMac.equals(provided)',
  "return hmac.digest('hex') === signature",
  'return a.localeCompare(signatureHex) === 0',
]

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sourceFiles(join(dir, entry.name)) : entry.name.endsWith('.ts') ? [join(dir, entry.name)] : [],
  )
}

/** `undefined` or `null`: comparing with them checks presence, not content. */
function isNothing(node: ts.Node): boolean {
  return (ts.isIdentifier(node) && node.text === 'undefined') || node.kind === ts.SyntaxKind.NullKeyword
}

/** Words of the identifiers in an expression, camelCase split; constants (ALL_CAPS) and lengths are not MACs. */
function mentionsMac(node: ts.Node): boolean {
  if (ts.isPropertyAccessExpression(node) && ['length', 'byteLength'].includes(node.name.text)) return false
  if (ts.isTypeOfExpression(node) || ts.isStringLiteral(node) || ts.isNumericLiteral(node)) return false
  let found = false
  const visit = (n: ts.Node) => {
    if (found) return
    if (ts.isIdentifier(n) && !/^[A-Z0-9_]+$/.test(n.text)) {
      const words = n.text.split(/(?=[A-Z])|_/)
      if (words.some((word) => MAC_WORD.test(word))) found = true
    }
    if (ts.isCallExpression(n) && ts.isPropertyAccessExpression(n.expression) && n.expression.name.text === 'digest') found = true
    ts.forEachChild(n, visit)
  }
  visit(node)
  return found
}

interface Finding {
  file: string
  line: number
  text: string
}

/** Non-constant-time comparisons of MAC-like values in one source text. */
function findUnsafeComparisons(file: string, text: string): Finding[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, true)
  const findings: Finding[] = []
  const report = (node: ts.Node) =>
    findings.push({ file, line: source.getLineAndCharacterOfPosition(node.getStart()).line + 1, text: node.getText().slice(0, 120) })
  const visit = (node: ts.Node) => {
    if (
      ts.isBinaryExpression(node) &&
      EQUALITY.has(node.operatorToken.kind) &&
      !isNothing(node.left) &&
      !isNothing(node.right) &&
      (mentionsMac(node.left) || mentionsMac(node.right))
    ) {
      report(node)
    }
    if (ts.isCallExpression(node)) {
      const callee = node.expression
      const name = ts.isPropertyAccessExpression(callee) ? callee.name.text : ts.isIdentifier(callee) ? callee.text : ''
      const onMac = node.arguments.some(mentionsMac) || (ts.isPropertyAccessExpression(callee) && mentionsMac(callee.expression))
      if ((name === 'equals' || name === 'compare' || name === 'localeCompare') && onMac) report(node)
    }
    ts.forEachChild(node, visit)
  }
  visit(source)
  return findings
}

/** The statements of a function-valued property or declaration named `name`, as text. */
function bodyOf(text: string, name: string): string {
  const source = ts.createSourceFile('x.ts', text, ts.ScriptTarget.ES2022, true)
  let found = ''
  const visit = (node: ts.Node) => {
    if ((ts.isMethodDeclaration(node) || ts.isFunctionDeclaration(node)) && node.name?.getText() === name && node.body) {
      found = node.body.getText()
    }
    ts.forEachChild(node, visit)
  }
  visit(source)
  return found
}

describe('MAC comparisons in packages/core/src', () => {
  it('the checker flags planted non-constant-time comparisons and passes constant-time ones', () => {
    for (const line of PLANTED) expect([line, findUnsafeComparisons('planted.ts', line).length > 0]).toEqual([line, true])
    const clean = [
      'if (expected.byteLength !== MAC_BYTES) return false',
      'return timingSafeEqual(mac(key, prefix, body), expected)',
      'if (signature.length !== SIGNATURE_HEX_LENGTH) throw error',
      'if (name === HEADER_SIGNATURE) slot = 2',
      "if (typeof signature !== 'string') throw error",
      'if (mac === undefined) throw error',
      'if (signature == null) throw error',
    ]
    for (const line of clean) expect([line, findUnsafeComparisons('clean.ts', line)]).toEqual([line, []])
  })

  it('compares no signature or MAC with ==, ===, !=, !==, Buffer.compare, equals or localeCompare', () => {
    const files = sourceFiles(SRC)
    expect(files.length).toBeGreaterThan(10)
    const findings = files.flatMap((file) => findUnsafeComparisons(relative(SRC, file), readFileSync(file, 'utf8')))
    expect(findings).toEqual([])
    printTable('MAC comparison scan of packages/core/src', [
      {
        files: files.length,
        'unsafe comparisons': findings.length,
        'planted cases caught': PLANTED.filter((line) => findUnsafeComparisons('planted.ts', line).length > 0).length,
      },
    ])
  })

  it('has each crypto backend compare with timingSafeEqual or crypto.subtle.verify after a 32-byte length check', () => {
    for (const [file, primitive] of [
      ['crypto/node.ts', /timingSafeEqual\(mac\(key, prefix, body\), expected\)/],
      ['crypto/web.ts', /crypto\.subtle\.verify\('HMAC', .*expected/],
    ] as const) {
      const text = readFileSync(join(SRC, file), 'utf8')
      expect(text).toMatch(/const MAC_BYTES = 32\b/)
      const verify = bodyOf(text, 'verify')
      expect(verify, file).toMatch(primitive)
      const guard = verify.indexOf('if (expected.byteLength !== MAC_BYTES) return false')
      expect(guard, `${file}: length check`).toBeGreaterThanOrEqual(0)
      expect(guard, `${file}: length check before the comparison`).toBeLessThan(verify.search(primitive))
    }
  })

  it('has the verifier pass decoded 32-byte MACs of a 64-hex signature to the backend, never the hex text', () => {
    const text = readFileSync(join(SRC, 'verify.ts'), 'utf8')
    expect(text).toMatch(/const SIGNATURE_HEX_LENGTH = 64\b/)
    // decodeSignature refuses anything but 64 hex characters and yields 32 bytes.
    const decodeBody = bodyOf(text, 'decodeSignature')
    expect(decodeBody).toMatch(/if \(hex\.length !== SIGNATURE_HEX_LENGTH\) return undefined/)
    expect(decodeBody).toMatch(/new Uint8Array\(SIGNATURE_HEX_LENGTH \/ 2\)/)
    expect(decodeBody).toMatch(/return invalid < 0 \? undefined : out/)
    // checkShape decodes the signature and refuses it before anything is compared.
    const checkShape = bodyOf(text, 'checkShape')
    const decode = checkShape.indexOf('const mac = decodeSignature(signature)')
    const refuse = checkShape.indexOf('if (mac === undefined)')
    expect(decode).toBeGreaterThanOrEqual(0)
    expect(refuse).toBeGreaterThan(decode)
    // verifyPrepared (and verifyRemaining, for further keys on Web Crypto) compare only the decoded mac.
    const verifyPrepared = bodyOf(text, 'verifyPrepared')
    const shaped = verifyPrepared.indexOf('checkShape(headers, body, tolerance, now)')
    const compare = verifyPrepared.indexOf('backend.verify(keys[index], prefix, bytes, mac)')
    expect([shaped, compare].every((at) => at >= 0)).toBe(true)
    expect(shaped).toBeLessThan(compare)
    expect(bodyOf(text, 'verifyRemaining')).toMatch(/backend\.verify\(keys\[next\], prefix, bytes, mac\)/)
    for (const body of [verifyPrepared, bodyOf(text, 'verifyRemaining')]) expect(body).not.toMatch(/backend\.verify\([^)]*signature/)
    // No other call site compares MACs: backend.verify appears only in the verifier.
    const callers = sourceFiles(SRC).filter((file) => /backend\.verify\(/.test(readFileSync(file, 'utf8')))
    expect(callers.map((file) => relative(SRC, file))).toEqual(['verify.ts'])
  })
})
