/**
 * The console's two static assets, served from its own origin so the content
 * security policy can forbid inline script and style.
 *
 * @module
 */

/**
 * Progressive enhancement: pages are complete without it. With it, a page
 * whose body names a live feed re-fetches its own `<main>` (server-rendered,
 * server-escaped) whenever the feed reports a change.
 */
export const SCRIPT = `"use strict";
(() => {
  const body = document.body;
  const feed = body.dataset.live;
  const badge = document.getElementById("live");
  if (!feed || !window.EventSource || !badge) return;
  let busy = false;
  let again = false;
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
        body.dataset.version = String(Number(body.dataset.version || "0") + 1);
      } while (again);
    } catch {
      badge.textContent = "offline";
    } finally {
      busy = false;
    }
  }
  const source = new EventSource(feed);
  source.addEventListener("open", () => { badge.textContent = "live"; badge.className = "on"; });
  source.addEventListener("error", () => { badge.textContent = "reconnecting"; badge.className = ""; });
  source.addEventListener("change", () => { void refresh(); });
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
.Warning { color: #c60; }
`;
