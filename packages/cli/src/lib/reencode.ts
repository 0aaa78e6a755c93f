/**
 * The usual ways a body gets re-encoded between the sender and the app that captured it — a proxy
 * or a body parser that parses the JSON and writes it again — as candidates for `verify` to try
 * when a signature does not match: compact JSON, pretty-printed JSON (2 spaces), non-ASCII as
 * `\uXXXX` escapes or those escapes decoded, and a final newline removed or added.
 */

/** One way of re-encoding the captured body, and its bytes. */
export interface Reencoding {
  /** What was done, e.g. `compact JSON, without its final newline` (never the body itself). */
  name: string
  bytes: Uint8Array
}

interface Layout {
  name: string | undefined
  text: string
}

const encoder = new TextEncoder()

/** Non-ASCII characters (UTF-16 code units above 0x7f) as lowercase `\uXXXX` escapes, as Python's json.dumps and PHP write them. */
function escapeNonAscii(text: string): string {
  return text.replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
}

/**
 * `\uXXXX` escapes of characters that JSON.stringify writes as themselves, decoded (an escaped
 * backslash before a `u` is left alone; quotes, backslashes and control characters stay escaped).
 */
function decodeEscapes(text: string): string {
  return text.replace(/(?<!\\)((?:\\\\)*)\\u([0-9a-fA-F]{4})/g, (whole, backslashes: string, hex: string) => {
    const code = Number.parseInt(hex, 16)
    return code < 0x20 || code === 0x22 || code === 0x5c ? whole : backslashes + String.fromCharCode(code)
  })
}

/** The layouts to try: the body as it is, and when it is JSON, compact and pretty-printed. */
function layouts(text: string): Layout[] {
  const out: Layout[] = [{ name: undefined, text }]
  try {
    const value = JSON.parse(text) as unknown
    out.push({ name: 'compact JSON (JSON.stringify of the parsed body)', text: JSON.stringify(value) })
    out.push({ name: 'pretty-printed JSON (2 spaces)', text: JSON.stringify(value, null, 2) })
  } catch {
    // Not JSON: only the escapes and the final newline can differ.
  }
  return out
}

/**
 * The re-encodings of a captured body to try, simplest first, each distinct from the body and from
 * the others. A body that is not UTF-8 text gets none.
 * @param body The captured body's exact bytes.
 * @example
 * for (const { name, bytes } of reencodings(body)) if (await matches(bytes)) return name
 */
export function reencodings(body: Uint8Array): Reencoding[] {
  let text: string
  try {
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(body)
  } catch {
    return []
  }
  const withoutNewline = (t: string): string => t.replace(/\r?\n$/, '')
  const endings: Array<[string | undefined, (t: string) => string]> = [
    [undefined, (t) => t],
    ['without its final newline', withoutNewline],
    ['with a final newline', (t) => `${withoutNewline(t)}\n`],
  ]
  const escapes: Array<[string | undefined, (t: string) => string]> = [
    [undefined, (t) => t],
    ['non-ASCII characters as \\uXXXX escapes', escapeNonAscii],
    ['\\uXXXX escapes decoded', decodeEscapes],
  ]
  const candidates: Array<{ names: string[]; text: string }> = []
  for (const layout of layouts(text)) {
    for (const [escapeName, escapeText] of escapes) {
      for (const [endingName, ending] of endings) {
        const names = [layout.name, escapeName, endingName].filter((n): n is string => n !== undefined)
        candidates.push({ names, text: ending(escapeText(layout.text)) })
      }
    }
  }
  // Simplest first: one change, then two, then three (a stable sort keeps the order above within each).
  candidates.sort((a, b) => a.names.length - b.names.length)
  const seen = new Set<string>([text])
  const found: Reencoding[] = []
  for (const { names, text: candidate } of candidates) {
    if (seen.has(candidate)) continue
    seen.add(candidate)
    found.push({ name: names.join(', '), bytes: encoder.encode(candidate) })
  }
  return found
}
