/**
 * Small inline SVG bar charts, drawn on the server: no script, no external asset, colours from the
 * stylesheet by class (the CSP allows styles only from the console's own stylesheet). Every chart
 * has a text label, and each bar a `<title>` with its figures.
 */
import { type Html, html } from './html.js'

/** One bar: its label (for the tooltip) and its stacked parts. */
export interface Bar {
  label: string
  parts: Array<{ name: string; value: number }>
}

const WIDTH = 720
const HEIGHT = 120
const AXIS = 14

/** A class name for a part (an outcome or a state), limited to safe characters. */
export function partClass(name: string): string {
  return `p-${name.replace(/[^a-z0-9_-]/gi, '_')}`
}

/**
 * A stacked bar chart.
 * @param bars Oldest first.
 * @param label What it shows, for screen readers and as its caption.
 * @param axis Labels under the first and last bars.
 */
export function barChart(bars: readonly Bar[], label: string, axis: [string, string]): Html {
  const max = Math.max(1, ...bars.map((bar) => bar.parts.reduce((sum, part) => sum + part.value, 0)))
  const step = WIDTH / Math.max(1, bars.length)
  const width = Math.max(1, step - 1)
  const plot = HEIGHT - AXIS
  const rects = bars.map((bar, i) => {
    let y = plot
    const total = bar.parts.reduce((sum, part) => sum + part.value, 0)
    const title = `${bar.label}: ${total}${bar.parts.length > 1 ? ` (${bar.parts.map((p) => `${p.name} ${p.value}`).join(', ')})` : ''}`
    const pieces = bar.parts
      .filter((part) => part.value > 0)
      .map((part) => {
        const h = Math.max(1, (part.value / max) * (plot - 4))
        y -= h
        return html`<rect class="${partClass(part.name)}" x="${(i * step).toFixed(1)}" y="${y.toFixed(1)}" width="${width.toFixed(1)}" height="${h.toFixed(1)}"/>`
      })
    return html`<g><title>${title}</title><rect class="slot" x="${(i * step).toFixed(1)}" y="0" width="${width.toFixed(1)}" height="${plot}"/>${pieces}</g>`
  })
  return html`<figure class="chart"><svg viewBox="0 0 ${WIDTH} ${HEIGHT}" role="img" aria-label="${label}" preserveAspectRatio="none">${rects}<line class="axis" x1="0" y1="${plot}" x2="${WIDTH}" y2="${plot}"/><text x="0" y="${HEIGHT - 2}">${axis[0]}</text><text x="${WIDTH}" y="${HEIGHT - 2}" text-anchor="end">${axis[1]}</text></svg><figcaption>${label} (highest bar: ${max})</figcaption></figure>`
}

/** The legend of a chart's parts, with totals. */
export function legend(totals: ReadonlyArray<{ name: string; value: number }>): Html {
  return html`<ul class="legend">${totals.map((t) => html`<li><span class="swatch ${partClass(t.name)}"></span>${t.name} <b>${t.value}</b></li>`)}</ul>`
}
