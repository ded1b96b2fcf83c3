/**
 * The load side of the Kubernetes API benchmark's create rate, run in a
 * Worker so the clients do not share the server's event loop: `clients`
 * loops, each POSTing creates one after another until `total` are made.
 * Posts back the elapsed time and each create's latency (ms).
 *
 * @module
 */
/// <reference lib="deno.worker" />

interface Job {
  readonly url: string;
  readonly ca?: string;
  readonly clients: number;
  readonly total: number;
  readonly prefix: string;
}

self.onmessage = async (message: MessageEvent<Job>) => {
  const { url, ca, clients, total, prefix } = message.data;
  const client = ca === undefined ? undefined : Deno.createHttpClient({ caCerts: [ca] });
  const latencies: number[] = [];
  let next = 0;
  const failures: string[] = [];
  const loop = async () => {
    for (;;) {
      const i = next++;
      if (i >= total) return;
      const t0 = performance.now();
      const response = await fetch(`${url}/apis/kstack.sh/v1/clusters`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          apiVersion: "kstack.sh/v1",
          kind: "Cluster",
          metadata: { name: `${prefix}-${i}`, labels: { app: "bench" } },
          spec: { replicas: i % 5, zone: "a" },
        }),
        ...(client === undefined ? {} : { client }),
      });
      await response.body?.cancel();
      latencies.push(performance.now() - t0);
      if (response.status !== 201 && failures.length < 3) failures.push(String(response.status));
    }
  };
  const t0 = performance.now();
  await Promise.all(Array.from({ length: clients }, loop));
  const elapsed = performance.now() - t0;
  client?.close();
  self.postMessage({ elapsed, latencies, failures });
};
