"""One self-contained HTML page: inline CSS, figures as data URIs, a few lines of optional inline
script (table sorting). A Content-Security-Policy forbids every network request, so the page
loads the same offline, and it reads, navigates by keyboard and prints without the script."""

from __future__ import annotations

from collections.abc import Sequence

from benchcast.utils.html_table import Markup, cell, esc, fmt, table  # noqa: F401 (the report's cells and tables)

CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'unsafe-inline'"

STYLE = """
:root { color-scheme: light; }
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0 auto;
       max-width: 1180px; padding: 1rem 1.5rem 3rem; color: #1b1b1b; background: #fff; }
h1 { font-size: 1.6rem; margin-bottom: .2rem; } h2 { margin-top: 2.2rem; border-bottom: 2px solid #ddd; }
h3 { margin: 1.4rem 0 .4rem; font-size: 1.05rem; }
p.lead { color: #444; margin-top: 0; }
table { border-collapse: collapse; margin: .5rem 0 1rem; font-size: .85rem; max-width: 100%; }
th, td { border: 1px solid #ccc; padding: .25rem .5rem; text-align: right; vertical-align: top; }
th { background: #f2f2f2; } td.text, th.text { text-align: left; } td.text { min-width: 5em; }
th, td.text { overflow-wrap: anywhere; hyphens: auto; }  /* long names and flags wrap: no column cut off */
div.scroll { overflow-x: auto; }
caption { text-align: left; font-weight: 600; padding: .2rem 0; }
th button { font: inherit; font-weight: 600; background: none; border: 0; padding: 0; cursor: pointer; }
th button::after { content: " \\2195"; color: #888; }
a:focus, button:focus { outline: 3px solid #1a73e8; outline-offset: 2px; }
figure { margin: .5rem 0 1rem; }
figure img { max-width: 100%; height: auto; border: 1px solid #eee; box-sizing: border-box; }
figcaption { font-size: .85rem; color: #444; }
.warn { color: #8a4b00; } ul.warn { padding-left: 1.2rem; }
.ok { color: #1b6e1b; } .muted { color: #666; }
nav ul { columns: 3; padding-left: 1.2rem; }
dl.prov { display: grid; grid-template-columns: max-content 1fr; gap: .2rem 1rem; }
dl.prov dt { font-weight: 600; } dl.prov dd { margin: 0; font-family: ui-monospace, monospace;
       font-size: .85rem; word-break: break-all; }
@media print { div.scroll { overflow: visible; } body { max-width: none; padding: 0; font-size: 11pt; }
  nav, th button::after { display: none; }
  section.bench { break-before: page; } figure { break-inside: avoid; } a { color: inherit; } }
"""

# Sortable tables: th buttons added by script, so without it the headers are plain text.
SCRIPT = """
document.querySelectorAll('table.sortable').forEach(function (table) {
  table.querySelectorAll('thead th').forEach(function (th, col) {
    var button = document.createElement('button');
    button.type = 'button';
    button.textContent = th.textContent;
    button.setAttribute('aria-label', 'sort by ' + th.textContent);
    th.textContent = '';
    th.appendChild(button);
    button.addEventListener('click', function () {
      var body = table.tBodies[0];
      var rows = Array.prototype.slice.call(body.rows);
      var ascending = th.getAttribute('aria-sort') !== 'ascending';
      table.querySelectorAll('thead th').forEach(function (h) { h.removeAttribute('aria-sort'); });
      th.setAttribute('aria-sort', ascending ? 'ascending' : 'descending');
      rows.sort(function (a, b) {
        var x = a.cells[col].getAttribute('data-sort') || a.cells[col].textContent;
        var y = b.cells[col].getAttribute('data-sort') || b.cells[col].textContent;
        var nx = parseFloat(x), ny = parseFloat(y);
        var cmp = (!isNaN(nx) && !isNaN(ny)) ? nx - ny : x.localeCompare(y);
        return ascending ? cmp : -cmp;
      });
      rows.forEach(function (row) { body.appendChild(row); });
    });
  });
});
"""


def figure(uri: str, alt: str, caption: str) -> str:
    """An embedded image with its caption."""
    return f'<figure><img src="{uri}" alt="{esc(alt)}"><figcaption>{esc(caption)}</figcaption></figure>'


def warnings_list(items: Sequence[str]) -> str:
    """A list of warnings, or a line saying there are none."""
    if not items:
        return '<p class="ok">No warnings.</p>'
    return '<ul class="warn">' + "".join(f"<li>{esc(w)}</li>" for w in items) + "</ul>"


def provenance(entries: dict) -> str:
    """A definition list of what the page was made from."""
    rows = "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in entries.items())
    return f'<dl class="prov">{rows}</dl>'


def page(title: str, lead: str, sections: Sequence[str], nav: Sequence[tuple[str, str]] = ()) -> str:
    """The whole document."""
    links = "".join(f'<li><a href="#{esc(anchor)}">{esc(label)}</a></li>' for anchor, label in nav)
    nav_html = f'<nav aria-label="contents"><h2>Contents</h2><ul>{links}</ul></nav>' if nav else ""
    head = (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><meta http-equiv="Content-Security-Policy" '
        f'content="{CSP}"><meta name="viewport" content="width=device-width, initial-scale=1"><link rel="icon" '
        f'href="data:,"><title>{esc(title)}</title><style>{STYLE}</style></head>\n'
    )
    body = f'<body><header><h1>{esc(title)}</h1><p class="lead">{lead}</p></header>{nav_html}<main>'
    return head + body + "\n".join(sections) + f"</main><script>{SCRIPT}</script></body></html>\n"
