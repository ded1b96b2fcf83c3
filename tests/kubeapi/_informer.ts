/**
 * An informer of the real `@kubernetes/client-node` over the Clusters a
 * server serves, recording what it reports (`add a`, `update a`, `delete a`)
 * and resolving a wait once an entry came: for the informer tests and the
 * benchmark.
 *
 * @module
 */
import * as k8s from "@kubernetes/client-node";
import { CLUSTERS } from "./_kubeapi_harness.ts";

/** What the informer holds. */
export type Resource = k8s.KubernetesObject;

/** A client-node informer of the Clusters at `url`, recording `verb name` as they come. */
export interface Recorded {
  /** What it saw so far, as `add a`, `update a`, `delete a`. */
  readonly seen: string[];
  /** Resolves once it saw `entry` `times` times (rejects on an informer error). */
  until(entry: string, times?: number): Promise<void>;
  readonly informer: k8s.Informer<Resource> & k8s.ObjectCache<Resource>;
  /** Stops the informer (its watch request is aborted). */
  stop(): Promise<void>;
  /**
   * Resolves once the stopped informer's watch request is done (its stream
   * ended and its done handler ran).
   */
  readonly stopped: Promise<void>;
}

/** Starts an informer of the Clusters served at `url` (optionally label-selected). */
export async function informerOf(url: string, labelSelector?: string): Promise<Recorded> {
  const kc = new k8s.KubeConfig();
  kc.loadFromOptions({
    // client-node refuses plain HTTP unless told not to verify TLS.
    clusters: [{ name: "beehive", server: url, skipTLSVerify: true }],
    users: [{ name: "beehive" }],
    contexts: [{ name: "beehive", cluster: "beehive", user: "beehive" }],
    currentContext: "beehive",
  });
  const api = kc.makeApiClient(k8s.CustomObjectsApi);
  const list = () =>
    api.listClusterCustomObject({
      group: "kstack.sh",
      version: "v1",
      plural: "clusters",
      ...(labelSelector === undefined ? {} : { labelSelector }),
    }) as Promise<k8s.KubernetesListObject<Resource>>;
  const informer = k8s.makeInformer<Resource>(kc, CLUSTERS, list, labelSelector);
  const seen: string[] = [];
  const waiting: { entry: string; times: number; resolve: () => void }[] = [];
  const count = (entry: string) => seen.filter((e) => e === entry).length;
  const record = (verb: string) => (obj: Resource) => {
    const entry = `${verb} ${obj.metadata?.name}`;
    seen.push(entry);
    for (const w of waiting) if (w.entry === entry && count(entry) >= w.times) w.resolve();
  };
  const failed = Promise.withResolvers<never>();
  failed.promise.catch(() => {});
  informer.on("add", record("add"));
  informer.on("update", record("update"));
  informer.on("delete", record("delete"));
  let stopping = false;
  const stopped = Promise.withResolvers<void>();
  informer.on("error", (error: unknown) => {
    // Stopping aborts the watch's request, which client-node reports as an error.
    if (!stopping || (error as Error | undefined)?.name !== "AbortError") {
      failed.reject(error);
    }
  });
  // A stop is over once the watch request's done handler ran: client-node calls it on its own,
  // with no event to wait on when stopped, so the test wraps it.
  const lw = informer as unknown as { doneHandler(err: unknown): Promise<void> };
  const done = lw.doneHandler.bind(lw);
  lw.doneHandler = async (err) => {
    await done(err);
    if (stopping) stopped.resolve();
  };
  await informer.start();
  return {
    seen,
    informer,
    until(entry, times = 1) {
      if (count(entry) >= times) return Promise.resolve();
      const { promise, resolve } = Promise.withResolvers<void>();
      waiting.push({ entry, times, resolve });
      return Promise.race([promise, failed.promise]);
    },
    async stop() {
      stopping = true;
      await informer.stop();
    },
    stopped: stopped.promise,
  };
}
