/**
 * The console in a real browser: headless Chromium (Debian's `chromium`,
 * which `scripts/setup` installs when missing) driven by `playwright-core`
 * loads the console beside a running controller, clicks from a kind to an
 * object, sees a condition change arrive live after the controller writes
 * it, and saves a screenshot under the test's temp dir; and over a kind of
 * 250 objects pages, filters, sees a row patched live without the list being
 * refetched, and fits a phone's width; and filters by a label selector,
 * shows a malformed one's message, and drops a row whose object stops
 * matching and adds one that starts, live.
 *
 * `BEEHIVE_CHROMIUM` overrides the browser path; `BEEHIVE_PLAYWRIGHT_CORE`
 * overrides where playwright-core is imported from (default: the
 * `playwright-core` devDependency).
 *
 * @module
 */
import assert from "node:assert/strict";
import { existsSync, statSync } from "node:fs";
import process from "node:process";
import { Beehive, defineKind, settled } from "../../mod.ts";
import type { Store } from "../../store/mod.ts";
import { consoleHandler } from "../../console/mod.ts";
import { type LoopbackServer, serveLoopback } from "../_loopback_server.ts";
import { openSqliteStore } from "../../store/sqlite/mod.ts";
import { tempDir } from "../_beehive_harness.ts";
import { test } from "../_test.ts";

/** The part of playwright-core's API this test drives. */
interface Page {
  goto(url: string): Promise<unknown>;
  click(selector: string): Promise<void>;
  fill(selector: string, value: string): Promise<void>;
  setViewportSize(size: { width: number; height: number }): Promise<void>;
  waitForSelector(
    selector: string,
    options?: { timeout?: number; state?: "attached" | "detached" },
  ): Promise<unknown>;
  waitForURL(url: RegExp, options?: { timeout?: number }): Promise<void>;
  textContent(selector: string): Promise<string | null>;
  evaluate<T>(fn: string): Promise<T>;
  screenshot(options: { path: string; fullPage?: boolean }): Promise<unknown>;
}
interface BrowserContext {
  newPage(): Promise<Page>;
  close(): Promise<void>;
}
interface PlaywrightCore {
  chromium: {
    launchPersistentContext(
      userDataDir: string,
      options: { executablePath: string; headless: boolean; args: string[] },
    ): Promise<BrowserContext>;
  };
}

const CHROMIUM = process.env.BEEHIVE_CHROMIUM ?? "/usr/bin/chromium";
const FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-quic",
  "--no-first-run",
  "--disable-component-update",
  "--disable-sync",
];
const Cluster = { group: "kstack.sh", kind: "Cluster" };

async function loadPlaywright(): Promise<PlaywrightCore> {
  const specifier = process.env.BEEHIVE_PLAYWRIGHT_CORE ?? "playwright-core";
  try {
    return await import(specifier) as PlaywrightCore;
  } catch (error) {
    throw new Error(
      `Cannot import ${specifier}: run npm ci (playwright-core is a devDependency)`,
      { cause: error },
    );
  }
}

/** A console page in headless Chromium, with the kind-list requests it made. */
interface ConsolePage {
  readonly url: string;
  readonly page: Page;
  /** The names of the kind page's rows, in order. */
  names(): Promise<string[]>;
  /** The query of every kind-list request (not the live feeds), in order. */
  readonly listFetches: string[];
}

/**
 * Serves a console over `store` on a loopback server and opens a page on it
 * in headless Chromium (profile under `profileDir`); closes both after `fn`.
 */
async function withConsolePage(
  store: Store,
  profileDir: string,
  fn: (c: ConsolePage) => Promise<void>,
): Promise<void> {
  const { chromium } = await loadPlaywright();
  const handler = consoleHandler({ store, pollInterval: 100 });
  const listFetches: string[] = [];
  const server = await serveLoopback((request) => {
    const url = new URL(request.url);
    if (url.pathname.startsWith("/kinds/") && !url.pathname.endsWith("/live")) {
      listFetches.push(url.search);
    }
    return handler(request);
  });
  let browser: BrowserContext | undefined;
  try {
    browser = await chromium.launchPersistentContext(profileDir, {
      executablePath: CHROMIUM,
      headless: true,
      args: FLAGS,
    });
    const page = await browser.newPage();
    const names = () =>
      page.evaluate<string[]>(
        'Array.from(document.querySelectorAll("#objects tbody tr"), (r) => r.dataset.name)',
      );
    await fn({ url: server.url, page, names, listFetches });
  } finally {
    await browser?.close();
    await server.close();
  }
}

// playwright-core probes /proc and the home directory, which Deno grants only
// with -A: scripts/test runs this file as its own `deno test -A` suite, and a
// Deno run without those permissions leaves the test out instead of failing it.
const denoPermissions = (globalThis as { Deno?: typeof Deno }).Deno?.permissions;
const runnable = denoPermissions === undefined ||
  denoPermissions.querySync({ name: "sys" }).state === "granted";

if (runnable) {
  test("console in headless Chromium: kind to object, a condition change arrives live", async () => {
    assert.ok(
      existsSync(CHROMIUM),
      `no browser at ${CHROMIUM}: run scripts/setup (installs Debian's chromium) or set BEEHIVE_CHROMIUM`,
    );
    const { chromium } = await loadPlaywright();
    const dir = tempDir();
    const store = await openSqliteStore(dir.file("beehive.db"));
    const bh = new Beehive(store);
    bh.register<{ up: boolean }, unknown>(Cluster, async (obj, cc) => {
      await cc.setCondition({
        type: "Ready",
        status: obj.spec.up ? "True" : "False",
        reason: obj.spec.up ? "Up" : "Waiting",
        message: `generation ${obj.generation}`,
      });
      return settled();
    });
    const stop = await bh.start();
    let server: LoopbackServer | undefined;
    let browser: BrowserContext | undefined;
    try {
      const clusters = bh.client<{ up: boolean }, unknown>(Cluster);
      const watch = await clusters.watchList();
      const prod = await clusters.create("prod", { up: false });
      for await (const change of watch) if (change.object?.observedGeneration === 1) break;

      server = await serveLoopback(
        consoleHandler({ store, basePath: "/console", pollInterval: 200 }),
      );
      browser = await chromium.launchPersistentContext(dir.file("profile"), {
        executablePath: CHROMIUM,
        headless: true,
        args: FLAGS,
      });
      const page = await browser.newPage();
      await page.goto(`${server.url}/console/`);
      await page.click('a[href="/console/kinds/Cluster.kstack.sh"]');
      await page.waitForSelector(
        'tr[data-name="prod"] [data-condition="Ready"][data-status="False"]',
      );
      await page.click('tr[data-name="prod"] a');
      await page.waitForURL(new RegExp(`/console/objects/${prod.id}$`));
      const status = 'tr[data-condition="Ready"] [data-field="status"]';
      assert.equal(await page.textContent(status), "False");
      // Subscribed before the write, and the page must not reload to show it.
      await page.waitForSelector("#live.on");
      await page.evaluate("window.__sameDocument = true");

      await clusters.update(prod.id, { up: true });
      await page.waitForSelector(`${status}.s-True`, { timeout: 15_000 });
      assert.equal(await page.textContent(status), "True");
      assert.equal(
        await page.textContent('tr[data-condition="Ready"] [data-field="reason"]'),
        "Up",
      );
      assert.equal(await page.evaluate<boolean>("window.__sameDocument === true"), true);

      const shot = dir.file("console.png");
      await page.screenshot({ path: shot, fullPage: true });
      assert.ok(statSync(shot).size > 1_000, "the screenshot holds an image");
    } finally {
      await browser?.close();
      await server?.close();
      await stop({ signal: AbortSignal.timeout(10_000) });
      await store.close();
      dir.remove();
    }
  });

  test("console in headless Chromium: a kind pages, filters, patches a row live and fits a phone", async () => {
    const dir = tempDir();
    const store = await openSqliteStore(dir.file("beehive.db"));
    const bh = new Beehive(store);
    try {
      await store.within(async (tx) => {
        const clusters = new Beehive(tx).client(Cluster);
        for (let i = 0; i < 250; i++) await clusters.create(`c-${String(i).padStart(3, "0")}`, {});
      });
      await withConsolePage(
        store,
        dir.file("profile"),
        async ({ url, page, names, listFetches }) => {
          await page.goto(`${url}/kinds/Cluster.kstack.sh`);
          let shown = await names();
          assert.equal(shown.length, 100);
          assert.equal(shown[0], "c-000");
          await page.click('a[rel="next"]');
          await page.waitForURL(/after=\d+/);
          shown = await names();
          assert.deepEqual([shown.length, shown[0], shown[99]], [100, "c-100", "c-199"]);

          await page.fill('input[name="prefix"]', "c-24");
          await page.click('.filters button[type="submit"]');
          await page.waitForURL(/prefix=c-24/);
          assert.deepEqual(await names(), Array.from({ length: 10 }, (_, i) => `c-24${i}`));

          await page.waitForSelector("#live.on");
          await page.evaluate("window.__sameDocument = true");
          const before = listFetches.length;
          const target = await bh.client(Cluster).getByName("c-245");
          await bh.adminClient(Cluster).setCondition(target.id, {
            type: "Ready",
            status: "True",
            reason: "Up",
          });
          await page.waitForSelector(
            'tr[data-name="c-245"] [data-condition="Ready"][data-status="True"]',
            {
              timeout: 15_000,
            },
          );
          assert.equal(listFetches.length, before, "the row was patched, not the list refetched");
          assert.equal(await page.evaluate<boolean>("window.__sameDocument === true"), true);

          await page.setViewportSize({ width: 360, height: 740 });
          assert.equal(
            await page.evaluate<boolean>(
              "document.documentElement.scrollWidth <= window.innerWidth",
            ),
            true,
            "no sideways scrolling on a phone",
          );
          const shot = dir.file("phone.png");
          await page.screenshot({ path: shot, fullPage: true });
          assert.ok(statSync(shot).size > 1_000);
        },
      );
    } finally {
      await store.close();
      dir.remove();
    }
  });

  test("console in headless Chromium: a kind's printer columns show on its page and follow a change live", async () => {
    const dir = tempDir();
    const store = await openSqliteStore(dir.file("beehive.db"));
    const Pool = defineKind<{ replicas: number; image?: string }>({
      group: "kstack.sh",
      kind: "Pool",
      columns: [
        { name: "Replicas", jsonPath: ".spec.replicas", type: "integer" },
        { name: "Image", jsonPath: ".spec.image" },
      ],
    });
    const bh = new Beehive(store, { kinds: [Pool] });
    try {
      await (await bh.start())();
      const pools = bh.client(Pool);
      await pools.create("web", { replicas: 3, image: "nginx" });
      await pools.create("db", { replicas: 1 });
      await withConsolePage(store, dir.file("profile"), async ({ url, page, listFetches }) => {
        await page.goto(`${url}/kinds/Pool.kstack.sh`);
        const headers = await page.evaluate<string[]>(
          'Array.from(document.querySelectorAll("#objects thead th"), (th) => th.textContent.trim())',
        );
        assert.deepEqual(headers.slice(0, 4), ["Name", "Replicas", "Image", "ID"]);
        const cells = (name: string) =>
          page.evaluate<string[]>(
            `Array.from(document.querySelectorAll('tr[data-name="${name}"] td[data-column]'), (td) => td.textContent.trim())`,
          );
        assert.deepEqual(await cells("web"), ["3", "nginx"]);
        assert.deepEqual(await cells("db"), ["1", "-"]);

        await page.waitForSelector("#live.on");
        const before = listFetches.length;
        await pools.updateByName("db", { replicas: 2, image: "postgres" });
        await page.waitForSelector('tr[data-name="db"] td[data-column="Image"]:text("postgres")', {
          timeout: 15_000,
        });
        assert.deepEqual(await cells("db"), ["2", "postgres"]);
        assert.equal(listFetches.length, before, "the row was patched, not the list refetched");
      });
    } finally {
      await store.close();
      dir.remove();
    }
  });

  test("console in headless Chromium: a label filter, its error, and rows leaving and joining live", async () => {
    const dir = tempDir();
    const store = await openSqliteStore(dir.file("beehive.db"));
    const bh = new Beehive(store);
    try {
      await store.within(async (tx) => {
        const clusters = new Beehive(tx).client(Cluster);
        for (let i = 0; i < 30; i++) {
          await clusters.create(`c-${String(i).padStart(3, "0")}`, {}, {
            labels: { tier: i % 10 === 0 ? "db" : "web" },
          });
        }
      });
      await withConsolePage(
        store,
        dir.file("profile"),
        async ({ url, page, names, listFetches }) => {
          await page.goto(`${url}/kinds/Cluster.kstack.sh`);
          await page.fill('input[name="labels"]', "tier in (db");
          await page.click('.filters button[type="submit"]');
          await page.waitForSelector('p.error[role="alert"]');
          assert.match(await page.textContent("p.error") ?? "", /Bad Request: .*labelSelector/);

          await page.fill('input[name="labels"]', "tier=db");
          await page.click('.filters button[type="submit"]');
          await page.waitForURL(/labels=tier%3Ddb/);
          assert.deepEqual(await names(), ["c-000", "c-010", "c-020"]);
          assert.equal(await page.textContent('tr[data-name="c-010"] .label'), "tier=db");

          await page.waitForSelector("#live.on");
          await page.evaluate("window.__sameDocument = true");
          const before = listFetches.length;
          const clusters = bh.client(Cluster);
          const leaving = await clusters.getByName("c-010");
          await clusters.updateMetadata(leaving.id, { labels: { tier: "web" } });
          await page.waitForSelector('tr[data-name="c-010"]', {
            state: "detached",
            timeout: 15_000,
          });
          const joining = await clusters.getByName("c-025");
          await clusters.updateMetadata(joining.id, { labels: { tier: "db" } });
          await page.waitForSelector('tr[data-name="c-025"]', { timeout: 15_000 });
          assert.deepEqual(await names(), ["c-000", "c-020", "c-025"]);
          assert.equal(listFetches.length, before, "rows were patched, not the list refetched");
          assert.equal(await page.evaluate<boolean>("window.__sameDocument === true"), true);
        },
      );
    } finally {
      await store.close();
      dir.remove();
    }
  });
}
