/** Pieces the pages share: problems, notices, cards, state labels, links to events and emails, the hidden CSRF field. */
import { EMAIL_ORDER_KEY_PREFIX } from '../../ordering/key.js'
import type { PageContext } from '../context.js'
import { CSRF_FIELD } from '../csrf.js'
import { ago, utc } from '../format.js'
import { type Html, type HtmlValue, html } from '../html.js'

/** A box saying a read failed, and that the rest of the page still works. */
export function problem(what: string, message: string): Html {
  return html`<div class="problem" role="alert"><b>The store did not answer ${what}.</b> ${message}</div>`
}

/** A grey box with something the store cannot tell, or a hint. */
export function notice(...parts: HtmlValue[]): Html {
  return html`<div class="notice">${parts}</div>`
}

/** A figure in a card. */
export function card(label: string, value: HtmlValue, href?: string): Html {
  const inner = html`<b>${value}</b><span>${label}</span>`
  return href ? html`<a class="card" href="${href}">${inner}</a>` : html`<div class="card">${inner}</div>`
}

/** A time with its distance from now, e.g. `2026-11-27 12:00:00Z (3 min ago)`. */
export function when(ms: number | null | undefined, now: number): Html {
  if (ms === null || ms === undefined) return html`—`
  return html`<span title="${new Date(ms).toISOString()}">${utc(ms)}</span> <span class="note">(${ago(ms, now)})</span>`
}

/** The webhook-id of a dedup key in the console's namespace, or the whole key for another namespace. */
export function eventIdOf(ctx: PageContext, key: string): string {
  const prefix = `${ctx.settings.namespace}:`
  return key.startsWith(prefix) ? key.slice(prefix.length) : key
}

/** The email id of an order key (`namespace:email:<id>`), or undefined for another kind of key. */
export function emailIdOf(ctx: PageContext, orderKey: string | null): string | undefined {
  const prefix = `${ctx.settings.namespace}:${EMAIL_ORDER_KEY_PREFIX}`
  return orderKey?.startsWith(prefix) ? orderKey.slice(prefix.length) : undefined
}

/** A link to an event's page. */
export function eventLink(ctx: PageContext, key: string): Html {
  const id = eventIdOf(ctx, key)
  return html`<a class="mono" href="${ctx.href(`/events/${encodeURIComponent(id)}`)}">${id}</a>`
}

/** A link to an email's story, from its order key; nothing when the key is not an email's. */
export function emailLink(ctx: PageContext, orderKey: string | null): Html {
  const id = emailIdOf(ctx, orderKey)
  return id === undefined
    ? html`<span class="note">—</span>`
    : html`<a class="mono" href="${ctx.href(`/emails/${encodeURIComponent(id)}`)}">${id}</a>`
}

/** The hidden field every form carries. */
export function csrfField(ctx: PageContext): Html {
  return html`<input type="hidden" name="${CSRF_FIELD}" value="${ctx.csrf}">`
}

/** An inbox state, coloured. */
export function stateLabel(state: string): Html {
  const words: Record<string, string> = { pending: 'waiting', running: 'running', done: 'handled', dead: 'dead' }
  return html`<span class="${state}">${words[state] ?? state}</span>`
}
