/**
 * The console's two static assets, served from its own origin so the content
 * security policy can forbid inline script and style.
 *
 * @module
 */

/**
 * Progressive enhancement: pages are complete without it. With it, a page
 * whose body names a live feed follows it: a kind page patches the changed
 * row the feed sends (server-rendered, server-escaped), the kinds page the
 * changed kind's row, and an object page re-fetches its own `<main>`.
 */
export const SCRIPT = `"use strict";
(() => {
  const body = document.body;
  const feed = body.dataset.live;
  const badge = document.getElementById("live");
  if (!feed || !window.EventSource || !badge) return;
  let busy = false;
  let again = false;
  function bump() {
    body.dataset.version = String(Number(body.dataset.version || "0") + 1);
  }
  async function refresh() {
    if (busy) { again = true; return; }
    busy = true;
    try {
      do {
        again = false;
        const url = new URL(location.href);
        url.searchParams.set("fragment", "main");
        const response = await fetch(url, { headers: { accept: "text/html" } });
        if (response.status === 404) { badge.textContent = "gone"; source.close(); return; }
        if (!response.ok) break;
        const main = document.querySelector("main");
        if (main) main.innerHTML = await response.text();
        bump();
      } while (again);
    } catch {
      badge.textContent = "offline";
    } finally {
      busy = false;
    }
  }
  function element(markup) {
    const template = document.createElement("template");
    template.innerHTML = markup;
    return template.content.firstElementChild;
  }
  // A kind page patches the changed row: replaced, removed when it no longer
  // matches the page's filter, appended when new and this is the last page.
  function patchRow(change) {
    const table = document.getElementById("objects");
    if (!table || !table.tBodies[0]) return false;
    const tbody = table.tBodies[0];
    const old = tbody.querySelector('tr[data-id="' + Number(change.id) + '"]');
    if (change.type === "Deleted" || typeof change.row !== "string") {
      if (old) old.remove();
      bump();
      return true;
    }
    const row = element(change.row);
    if (!row) return false;
    const fits = (row.dataset.name || "").startsWith(table.dataset.prefix || "") &&
      (!table.dataset.state || row.dataset.state === table.dataset.state);
    if (old) {
      if (fits) old.replaceWith(row); else old.remove();
    } else if (fits && table.dataset.last === "true") {
      tbody.appendChild(row);
      const empty = document.getElementById("empty");
      if (empty) empty.remove();
    }
    bump();
    return true;
  }
  function patchKind(update) {
    const tbody = document.querySelector("main table tbody");
    if (!tbody || typeof update.row !== "string") return false;
    const row = element(update.row);
    if (!row) return false;
    const old = tbody.querySelector('tr[data-kind="' + CSS.escape(String(update.kind)) + '"]');
    if (old) old.replaceWith(row); else tbody.appendChild(row);
    bump();
    return true;
  }
  function parse(event) {
    try { return JSON.parse(event.data); } catch { return undefined; }
  }
  const source = new EventSource(feed);
  source.addEventListener("open", () => { badge.textContent = "live"; badge.className = "on"; });
  source.addEventListener("error", () => { badge.textContent = "reconnecting"; badge.className = ""; });
  source.addEventListener("change", (event) => {
    const change = parse(event);
    if (!change || change.type === "Event" || !patchRow(change)) void refresh();
  });
  source.addEventListener("kind", (event) => {
    const update = parse(event);
    if (!update || !patchKind(update)) void refresh();
  });
})();
`;

/** A small stylesheet; the pages read fine without it. */
export const STYLE = `
:root { color-scheme: light dark; --muted: #777; --line: #8884; }
body { font: 14px/1.45 system-ui, sans-serif; margin: 0; }
header { display: flex; gap: 1em; align-items: baseline; padding: .6em 1.2em; border-bottom: 1px solid var(--line); }
header .brand { font-weight: 700; text-decoration: none; }
header nav { flex: 1; }
#live { font-size: 12px; color: var(--muted); }
#live.on::before { content: "\\25CF "; color: #2a2; }
main { padding: 1em 1.2em 3em; }
h1 { font-size: 1.3em; margin: .2em 0 .8em; }
h2 { font-size: 1.05em; margin: 1.6em 0 .5em; }
table { border-collapse: collapse; }
.scroll { overflow-x: auto; max-width: 100%; }
.filters { display: flex; flex-wrap: wrap; gap: .5em 1em; align-items: center; margin: 0 0 1em; }
.filters input { width: 14em; max-width: 100%; }
.pager { display: flex; flex-wrap: wrap; gap: 1em; margin-top: 1em; }
th, td { text-align: left; padding: .25em .9em .25em 0; border-bottom: 1px solid var(--line); vertical-align: top; }
th { font-weight: 600; color: var(--muted); }
pre { background: #8881; padding: .7em; overflow: auto; max-height: 30em; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: .2em 1.2em; }
dt { color: var(--muted); }
dd { margin: 0; }
.cond { display: inline-block; padding: 0 .45em; margin: 0 .25em .15em 0; border-radius: 3px; font-size: 12px; border: 1px solid var(--line); }
.s-True { background: #2a24; }
.s-False { background: #d334; }
.s-Unknown { background: #aa24; }
.muted { color: var(--muted); }
.label { display: inline-block; padding: 0 .4em; margin: 0 .25em .15em 0; border-radius: 3px; font: 12px ui-monospace, monospace; background: #8882; overflow-wrap: anywhere; }
.annotations div { font: 12px ui-monospace, monospace; white-space: pre-wrap; overflow-wrap: anywhere; }
.error { color: #c33; font-weight: 600; }
.Warning { color: #c60; }
@media (max-width: 640px) {
  header { flex-wrap: wrap; padding: .5em .8em; }
  main { padding: .8em .8em 2em; }
  .wide { display: none; }
  th, td { padding-right: .6em; }
  dl { grid-template-columns: 1fr; }
  dd { margin-bottom: .4em; overflow-wrap: anywhere; }
  .filters input { width: 100%; }
}
`;
