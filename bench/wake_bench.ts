/**
 * The dependency-wake benchmark: a parent that depends on a child which
 * becomes ready 5 ms after the parent was created.
 *
 * Each sample creates a client-only child (not ready) and a parent naming it.
 * The parent's controller declares the dependency, reads the child, and marks
 * itself Ready once the child is; until then it settles and waits for the
 * dependency wake. 5 ms after the parent's create, the benchmark writes the
 * child's status (ready). The figures are the time from that status commit
 * until the parent's Ready commit (the wake), and from the parent's create
 * until its Ready commit, as p50/p99 over the samples, on an idle store and
 * beside a writer that updates other objects back to back.
 *
 * The parent's first pass ran a few ms before the child became ready, so a
 * flat per-object floor would hold the wake until that pass is a floor
 * interval (1 s) old; the push budget lets it run at once.
 *
 * Run: `deno task bench:wake` (`--quick` for a smoke run). Figures go in
 * docs/performance.md.
 *
 * @module
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { Beehive, type ObjectId, settled } from "../mod.ts";
import { openSqliteStore } from "../store/sqlite/mod.ts";

const QUICK = process.argv.includes("--quick");
const SAMPLES = QUICK ? 20 : 200;
/** How long after the parent's create the child becomes ready, in ms. */
const CHILD_DELAY = 5;
const Parent = { group: "bench.beehive.dev", kind: "Parent" };
const Child = { group: "bench.beehive.dev", kind: "Child" };
const Noise = { group: "bench.beehive.dev", kind: "Noise" };

interface Sample {
  /** Child's ready commit → parent's Ready commit, in ms. */
  wake: number;
  /** Parent's create → parent's Ready commit, in ms. */
  total: number;
}

function quantile(sorted: readonly number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

async function run(busy: boolean): Promise<Sample[]> {
  const dir = mkdtempSync(join(tmpdir(), "beehive-wake-"));
  const store = await openSqliteStore(join(dir, "wake.db"));
  const bh = new Beehive(store);
  const ready = new Map<ObjectId, (at: number) => void>();
  bh.register<{ child: ObjectId }, { ready: boolean }>(Parent, async (obj, cc) => {
    await cc.addDependency(obj.spec.child);
    const child = await bh.client<unknown, { ready: boolean }>(Child).get(obj.spec.child);
    if (child.status?.ready === true && obj.status?.ready !== true) {
      await cc.updateStatus({ ready: true });
      ready.get(obj.id)?.(performance.now());
    }
    return settled();
  });
  bh.register(Noise, () => settled());
  const stop = await bh.start();
  const children = bh.client(Child);
  const admin = bh.adminClient(Child);
  const parents = bh.client(Parent);
  const noise = bh.client(Noise);
  let writing = busy;
  const writer = (async () => {
    if (!busy) return;
    const ids: ObjectId[] = [];
    for (let i = 0; i < 20; i++) ids.push((await noise.create(`n${i}`, { v: 0 })).id);
    for (let v = 1; writing; v++) {
      await noise.update(ids[v % ids.length], { v });
      // A macrotask between writes, so timers (the child's delay) still run on time.
      await new Promise((r) => setTimeout(r, 0));
    }
  })();
  const samples: Sample[] = [];
  try {
    for (let i = 0; i < SAMPLES; i++) {
      const child = await children.create(`c${i}`, {});
      const done = Promise.withResolvers<number>();
      const created = performance.now();
      const parent = await parents.create(`p${i}`, { child: child.id });
      ready.set(parent.id, done.resolve);
      await new Promise((r) =>
        setTimeout(r, Math.max(0, created + CHILD_DELAY - performance.now()))
      );
      await admin.updateStatus(child.id, { ready: true });
      const childReady = performance.now();
      const at = await done.promise;
      ready.delete(parent.id);
      samples.push({ wake: at - childReady, total: at - created });
    }
  } finally {
    writing = false;
    await writer;
    await stop();
    store.close();
    rmSync(dir, { recursive: true, force: true });
  }
  return samples;
}

function report(label: string, samples: Sample[]): void {
  const wake = samples.map((s) => s.wake).sort((a, b) => a - b);
  const total = samples.map((s) => s.total).sort((a, b) => a - b);
  const f = (n: number) => n.toFixed(1).padStart(7);
  console.log(
    `${label.padEnd(26)} wake p50 ${f(quantile(wake, 0.5))} ms  p99 ${f(quantile(wake, 0.99))} ms` +
      `   create→Ready p50 ${f(quantile(total, 0.5))} ms  p99 ${f(quantile(total, 0.99))} ms`,
  );
}

console.log(
  `dependency wake: ${SAMPLES} parents, each child ready ${CHILD_DELAY} ms after its parent's create`,
);
report("idle store", await run(false));
report("beside a busy writer", await run(true));
console.log("target: wake p50 ≤ 20 ms");
