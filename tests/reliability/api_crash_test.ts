/**
 * The crash campaign through the Kubernetes API: a server in a process of its
 * own over a SQLite file, 16 clients creating, patching and deleting their
 * own objects through it (and sending writes it must refuse), and a `SIGKILL`
 * once enough writes were answered. After each kill the file is opened as the
 * kill left it: every write answered 2xx is in the store, nothing answered
 * 4xx or 5xx is, and a write in flight at the kill is either whole or absent.
 * Then a new server serves the same file for the next round.
 *
 * @module
 */
import assert from "node:assert/strict";
import { Beehive } from "../../mod.ts";
import { openSqliteStore } from "../../store/sqlite/mod.ts";
import { test } from "../_test.ts";
import { seedClusters, serveInProcess } from "../kubeapi/_served_process.ts";
import { scratchDir } from "./_scratch.ts";

const Cluster = { group: "kstack.sh", kind: "Cluster" };
const CLUSTERS = "/apis/kstack.sh/v1/clusters";
const CLIENTS = 16;
const KILLS = 3;
/** Writes answered 2xx in a round before its kill. */
const ANSWERED_PER_ROUND = 300;

/** What the store may hold for one name: absent, or a spec `{ v }`. */
type State = { readonly v: number } | "absent";

/** One client's view of its own names: the state each acknowledged write left, and the one in flight. */
interface Ledger {
  /** The state the answered writes left, per name. */
  readonly known: Map<string, State>;
  /** The state the write in flight at the kill would leave, if any. */
  inFlight: { readonly name: string; readonly state: State } | undefined;
  answered: number;
  refused: number;
}

const sameState = (a: State, b: State) =>
  a === "absent" ? b === "absent" : b !== "absent" && a.v === b.v;

/** A deterministic generator (mulberry32). */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * One client's writes until the server goes away: creates, merge patches and
 * deletes of its own names, and writes the server must refuse (a create of a
 * taken name with another spec, a patch that is not JSON, one of a missing
 * name), each recorded in `ledger` once answered.
 */
async function client(
  url: string,
  id: number,
  round: number,
  ledger: Ledger,
  onAnswered: () => void,
): Promise<void> {
  const random = prng(round * 1_000 + id);
  const names = Array.from({ length: 4 }, (_, i) => `r${round}-c${id}-n${i}`);
  for (let step = 0;; step++) {
    const name = names[Math.floor(random() * names.length)];
    const current = ledger.known.get(name) ?? "absent";
    const v = round * 1_000_000 + id * 10_000 + step;
    const roll = random();
    let request: { method: string; path: string; type: string; body: string };
    let after: State;
    let mustRefuse = false;
    if (current === "absent") {
      if (roll < 0.1) {
        request = { method: "PATCH", path: `${CLUSTERS}/${name}`, type: MERGE, body: spec(v) };
        after = "absent";
        mustRefuse = true; // 404: nothing to patch
      } else {
        request = { method: "POST", path: CLUSTERS, type: JSON_TYPE, body: created(name, v) };
        after = { v };
      }
    } else if (roll < 0.1) {
      request = { method: "POST", path: CLUSTERS, type: JSON_TYPE, body: created(name, v) };
      after = current;
      mustRefuse = true; // 409: the name is taken
    } else if (roll < 0.2) {
      request = { method: "PATCH", path: `${CLUSTERS}/${name}`, type: MERGE, body: "{" };
      after = current;
      mustRefuse = true; // 400: not JSON
    } else if (roll < 0.75) {
      request = { method: "PATCH", path: `${CLUSTERS}/${name}`, type: MERGE, body: spec(v) };
      after = { v };
    } else {
      request = { method: "DELETE", path: `${CLUSTERS}/${name}`, type: JSON_TYPE, body: "{}" };
      after = "absent";
    }
    ledger.inFlight = mustRefuse ? undefined : { name, state: after };
    let status: number;
    try {
      const response = await fetch(`${url}${request.path}`, {
        method: request.method,
        headers: { "content-type": request.type },
        body: request.body,
      });
      status = response.status;
      await response.body?.cancel();
    } catch {
      return; // the server is gone: the write in flight stays in `inFlight`
    }
    ledger.inFlight = undefined;
    if (status >= 200 && status < 300) {
      assert.ok(!mustRefuse, `${request.method} ${name} was accepted: ${status}`);
      ledger.known.set(name, after);
      ledger.answered++;
      onAnswered();
    } else {
      assert.ok(status >= 400 && status < 500, `${request.method} ${name} answered ${status}`);
      assert.ok(mustRefuse, `${request.method} ${name} was refused: ${status}`);
      ledger.refused++;
    }
  }
}

const JSON_TYPE = "application/json";
const MERGE = "application/merge-patch+json";
const spec = (v: number) => JSON.stringify({ spec: { v } });
const created = (name: string, v: number) => JSON.stringify({ metadata: { name }, spec: { v } });

test("crash campaign through the API: after kill -9 of a serving process, every write answered 2xx is in the store and nothing answered 4xx is", async () => {
  const dir = scratchDir();
  const db = dir.file("api.db");
  await seedClusters(db, 1, 10);
  let answered = 0;
  let refused = 0;
  let inFlight = 0;
  try {
    for (let round = 1; round <= KILLS; round++) {
      const server = await serveInProcess(db);
      const ledgers: Ledger[] = Array.from({ length: CLIENTS }, () => ({
        known: new Map(),
        inFlight: undefined,
        answered: 0,
        refused: 0,
      }));
      const enough = Promise.withResolvers<void>();
      let count = 0;
      const onAnswered = () => {
        if (++count === ANSWERED_PER_ROUND) enough.resolve();
      };
      const clients = ledgers.map((ledger, id) =>
        client(server.url, id, round, ledger, onAnswered)
      );
      // A client failing its own checks ends the round early with its error.
      await Promise.race([enough.promise, Promise.all(clients)]);
      await server.kill();
      await Promise.all(clients);

      const store = await openSqliteStore(db);
      try {
        const stored = new Map<string, State>();
        for (const obj of await new Beehive(store).client(Cluster).list()) {
          if (obj.name.startsWith(`r${round}-`)) {
            stored.set(obj.name, { v: (obj.spec as { v: number }).v });
          }
        }
        for (const ledger of ledgers) {
          if (ledger.inFlight !== undefined) inFlight++;
          answered += ledger.answered;
          refused += ledger.refused;
          for (const [name, known] of ledger.known) {
            const actual = stored.get(name) ?? "absent";
            const pending = ledger.inFlight?.name === name ? ledger.inFlight.state : undefined;
            assert.ok(
              sameState(actual, known) || (pending !== undefined && sameState(actual, pending)),
              `${name}: the store holds ${JSON.stringify(actual)}, the answered writes left ` +
                `${JSON.stringify(known)}` +
                (pending === undefined ? "" : ` and the one in flight ${JSON.stringify(pending)}`),
            );
            stored.delete(name);
          }
          const first = ledger.inFlight;
          if (first !== undefined && !ledger.known.has(first.name)) {
            const actual = stored.get(first.name) ?? "absent";
            assert.ok(
              actual === "absent" || sameState(actual, first.state),
              `${first.name}: in flight, the store holds ${JSON.stringify(actual)}`,
            );
            stored.delete(first.name);
          }
        }
        assert.deepEqual([...stored.keys()], [], "objects no answered write made");
      } finally {
        await store.close();
      }
    }
    console.log(
      `[api-crash] ${KILLS} kills: ${answered} writes answered 2xx and found, ${refused} ` +
        `refused and absent, ${inFlight} in flight at a kill`,
    );
    assert.ok(answered >= KILLS * ANSWERED_PER_ROUND);
    assert.ok(refused > 0);
  } finally {
    dir.remove();
  }
});
