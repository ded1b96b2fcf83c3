/**
 * Opening a PostgreSQL store against a server that never answers: the open
 * gives up after `connectTimeout`, and rejects at once when its `signal`
 * aborts; either way it leaves no connection or timer behind.
 *
 * @module
 */
import assert from "node:assert/strict";
import { createServer, type Server, type Socket } from "node:net";
import { StoreError } from "../../src/model/errors.ts";
import { openPostgresStore } from "../../store/postgres/mod.ts";
import { test } from "../_test.ts";

/** A TCP server on 127.0.0.1 that accepts connections and never says a word. */
async function silentServer(): Promise<
  { url: string; accepted: Promise<void>; close(): Promise<void> }
> {
  const sockets = new Set<Socket>();
  const accepted = Promise.withResolvers<void>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    accepted.resolve();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `postgres://beehive:secret@127.0.0.1:${port}/beehive`,
    accepted: accepted.promise,
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

test("openPostgresStore against a server that never answers rejects after connectTimeout", async () => {
  const server = await silentServer();
  try {
    await assert.rejects(
      openPostgresStore(server.url, { connectTimeout: 200 }),
      (error) => error instanceof StoreError && /timeout/i.test(error.message),
    );
  } finally {
    await server.close();
  }
});

test("openPostgresStore rejects with the signal's reason when it aborts mid-connect", async () => {
  const server = await silentServer();
  try {
    const controller = new AbortController();
    const opening = openPostgresStore(server.url, { signal: controller.signal });
    await server.accepted;
    const reason = new Error("deploy cancelled");
    controller.abort(reason);
    await assert.rejects(opening, (error) => error === reason);
  } finally {
    await server.close();
  }
});

test("openPostgresStore with an aborted signal rejects before connecting", async () => {
  const controller = new AbortController();
  controller.abort();
  await assert.rejects(
    openPostgresStore("postgres://beehive@127.0.0.1:1/none", { signal: controller.signal }),
    (error) => (error as Error).name === "AbortError",
  );
});

test("openPostgresStore rejects a malformed connectTimeout or signal with InvalidOptionError", async () => {
  for (const options of [{ connectTimeout: -1 }, { connectTimeout: 1.5 }, { signal: {} }]) {
    await assert.rejects(
      openPostgresStore("postgres://beehive@127.0.0.1:1/none", options as never),
      (error) => (error as Error).name === "InvalidOptionError",
      JSON.stringify(options),
    );
  }
});
