/**
 * Plumbing for the console tests: a fresh in-memory store with a Beehive, and
 * a reader of server-sent-event bodies.
 *
 * @module
 */
import { Beehive } from "../../mod.ts";
import { openSqliteStore, type SqliteStore } from "../../store/sqlite/mod.ts";

/** Opens an in-memory store and a Beehive over it, runs `fn`, and closes the store. */
export async function withStore(
  fn: (store: SqliteStore, bh: Beehive) => Promise<void>,
): Promise<void> {
  const store = await openSqliteStore(":memory:");
  try {
    await fn(store, new Beehive(store));
  } finally {
    await store.close();
  }
}

/** Reads a server-sent-event body until `pred(text)` holds. */
export async function readUntil(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  pred: (text: string) => boolean,
): Promise<string> {
  const decoder = new TextDecoder();
  let text = "";
  while (!pred(text)) {
    const { done, value } = await reader.read();
    if (done) throw new Error(`the feed ended early:\n${text}`);
    text += decoder.decode(value, { stream: true });
  }
  return text;
}
