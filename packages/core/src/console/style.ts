/** The console's one stylesheet, served from the console's own path (`assets/console.css`): no external asset, works offline. */

/** The stylesheet. */
export const CONSOLE_CSS = `:root{--fg:#1b1f24;--muted:#5b6470;--line:#d8dde3;--bg:#fff;--soft:#f4f6f8;--accent:#0b57d0;--bad:#b3261e;--warn:#8a5a00;--ok:#146c2e}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:var(--fg);background:var(--bg)}
header{display:flex;flex-wrap:wrap;gap:4px 18px;align-items:baseline;padding:10px 20px;border-bottom:1px solid var(--line);background:var(--soft)}
header .brand{font-weight:600}
header nav a{margin-right:14px;color:var(--fg);text-decoration:none;padding-bottom:3px}
header nav a.here{border-bottom:2px solid var(--accent);font-weight:600}
header .mode{margin-left:auto;color:var(--muted);font-size:12px}
main{padding:16px 20px;max-width:1200px}
footer{padding:10px 20px;color:var(--muted);font-size:12px;border-top:1px solid var(--line)}
h1{font-size:20px;margin:4px 0 12px}
h2{font-size:16px;margin:22px 0 8px}
a{color:var(--accent)}
code,.mono{font-family:ui-monospace,"DejaVu Sans Mono",Menlo,monospace;font-size:12.5px;overflow-wrap:break-word}
.mono{overflow-wrap:anywhere}
table{border-collapse:collapse;width:100%;margin:6px 0}
th,td{text-align:left;padding:5px 8px;border-bottom:1px solid var(--line);vertical-align:top}
th{font-weight:600;color:var(--muted);font-size:12px}
table.figures{max-width:820px}
table.figures th{width:45%;font-size:14px;color:var(--fg);font-weight:400}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:4px 16px;margin:6px 0}
dl.facts dt{color:var(--muted)}
dl.facts dd{margin:0}
.cards{display:flex;flex-wrap:wrap;gap:12px;margin:8px 0}
.card{border:1px solid var(--line);border-radius:6px;padding:10px 14px;min-width:130px}
.card b{display:block;font-size:22px}
.card span{color:var(--muted);font-size:12px}
.note{color:var(--muted);font-size:13px;margin:6px 0}
.problem{border:1px solid var(--bad);background:#fdecea;color:var(--bad);padding:8px 12px;border-radius:6px;margin:8px 0}
.notice{border:1px solid var(--line);background:var(--soft);padding:8px 12px;border-radius:6px;margin:8px 0}
.done{color:var(--ok)}.dead{color:var(--bad)}.pending,.running{color:var(--warn)}
.error{color:var(--bad);overflow-wrap:anywhere}
form.filters{display:flex;flex-wrap:wrap;gap:8px 14px;align-items:end;margin:8px 0}
form.filters label{display:flex;flex-direction:column;font-size:12px;color:var(--muted)}
input,select,button{font:inherit;padding:4px 8px;border:1px solid var(--line);border-radius:4px;background:#fff;color:var(--fg)}
button{cursor:pointer;background:var(--soft)}
button.primary{background:var(--accent);border-color:var(--accent);color:#fff}
button.danger{background:var(--bad);border-color:var(--bad);color:#fff}
.actions{display:flex;gap:10px;align-items:center;margin:8px 0}
form.confirm{display:flex;gap:12px;align-items:center}
pre.payload{background:var(--soft);border:1px solid var(--line);padding:10px;white-space:pre-wrap;overflow-wrap:anywhere}
figure.chart{margin:6px 0 2px}
figure.chart svg{width:100%;height:120px;display:block}
figure.chart figcaption{color:var(--muted);font-size:12px}
svg text{font-size:10px;fill:var(--muted)}
svg .slot{fill:var(--soft)}
svg .axis{stroke:var(--line)}
ul.legend{list-style:none;display:flex;flex-wrap:wrap;gap:4px 14px;padding:0;margin:4px 0}
.swatch{display:inline-block;width:10px;height:10px;margin-right:5px;border-radius:2px}
.p-handled,.p-done{fill:#2e7d32;background:#2e7d32}
.p-queued,.p-pending{fill:#1565c0;background:#1565c0}
.p-duplicate{fill:#90a4ae;background:#90a4ae}
.p-skipped{fill:#00897b;background:#00897b}
.p-ignored{fill:#f9a825;background:#f9a825}
.p-rejected{fill:#e53935;background:#e53935}
.p-in_flight,.p-running{fill:#8e24aa;background:#8e24aa}
.p-failed,.p-dead{fill:#b71c1c;background:#b71c1c}
.p-recorded{fill:#455a64;background:#455a64}
`
