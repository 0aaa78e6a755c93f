/** The frame of every page: navigation, the store and the mode in the header, the page, and what the page cost in the footer. */
import type { PageContext, Section } from './context.js'
import { type Html, html } from './html.js'

const SECTIONS: ReadonlyArray<{ section: Exclude<Section, 'none'>; path: string; label: string }> = [
  { section: 'overview', path: '/', label: 'Overview' },
  { section: 'find', path: '/find', label: 'Find' },
  { section: 'dead', path: '/dead', label: 'Dead letters' },
]

/**
 * The whole document of a page.
 * @param startedAt `performance.now()` when the request came in, for the footer's time.
 */
export function layout(ctx: PageContext, page: { title: string; section: Section; body: Html }, startedAt: number): string {
  const { source, actions } = ctx.settings
  const nav = SECTIONS.map(
    ({ section, path, label }) =>
      html`<a href="${ctx.href(path)}"${page.section === section ? html` class="here" aria-current="page"` : ''}>${label}</a>`,
  )
  const mode = actions ? 'actions on: dead letters can be retried and purged' : 'read-only'
  const ms = (performance.now() - startedAt).toFixed(1)
  return html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><meta name="robots" content="noindex">
<title>${page.title} · webhooks console</title><link rel="stylesheet" href="${ctx.href('/assets/console.css')}"></head>
<body><header><span class="brand">Webhooks console</span><nav>${nav}</nav><span class="mode">${source.kind} · ${source.location} · ${mode}</span></header>
<main>${page.body}</main>
<footer>Rendered in ${ms} ms at ${new Date(ctx.now).toISOString()} · times are UTC · namespace <code>${ctx.settings.namespace}</code></footer>
</body></html>`.text
}
