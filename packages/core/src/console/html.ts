/**
 * HTML built only through `html\`…\``: every interpolated value is escaped unless it is already
 * `Html` (made by this template), so text from the store (ids, types, error messages a handler
 * threw) and from the request can never open a tag, an attribute or a script. Attributes are
 * always written quoted, and the escape covers both quotes.
 */

/** Markup made by `html` (its parts escaped). */
export class Html {
  readonly text: string
  constructor(text: string) {
    this.text = text
  }
  toString(): string {
    return this.text
  }
}

/** What `html` interpolates: markup as it is, lists joined, nothing for null/undefined/false, any other value escaped. */
export type HtmlValue = Html | string | number | boolean | null | undefined | readonly HtmlValue[]

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }

/**
 * `value` as HTML text, safe inside an element or a quoted attribute.
 * @example
 * escapeHtml('<b>') // '&lt;b&gt;'
 */
export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => ESCAPES[c] as string)
}

function part(value: HtmlValue): string {
  if (value instanceof Html) return value.text
  if (value === null || value === undefined || value === false) return ''
  if (Array.isArray(value)) return value.map(part).join('')
  return escapeHtml(String(value))
}

/**
 * Builds markup, escaping every interpolated value that is not `Html`.
 * @example
 * html`<td>${entry.type}</td>` // a type of `<script>` shows as text
 */
export function html(strings: TemplateStringsArray, ...values: HtmlValue[]): Html {
  let out = strings[0] ?? ''
  for (let i = 0; i < values.length; i++) out += part(values[i] as HtmlValue) + (strings[i + 1] ?? '')
  return new Html(out)
}
