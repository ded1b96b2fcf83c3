/**
 * Opening the store a CLI invocation names: a `postgres://` url (with
 * `?schema=`), `:memory:`, or a SQLite file path resolved from the working
 * directory; and resolving the paths the commands take (`apply -f`,
 * `serve --kubeconfig`) the same way.
 *
 * @module
 */
import { existsSync } from "node:fs";
import { isAbsolute, resolve } from "node:path";
import process from "node:process";
import type { Store } from "@beehive/beehive/store";
import { openSqliteStore } from "@beehive/beehive/sqlite";

/** The store named on the command line does not exist: reported as it was given. */
export class NoStoreError extends Error {
  override readonly name = "NoStoreError";
}

/**
 * The directory relative store paths resolve from: `cwd` when given, else
 * `INIT_CWD` (where `deno task` or `npm run` started), else the process's.
 */
export function workingDirectory(cwd: string | undefined): string {
  return cwd ?? process.env.INIT_CWD ?? process.cwd();
}

/** `path`, or when relative, `path` under `cwd`. */
export function resolvePath(path: string, cwd: string): string {
  return isAbsolute(path) ? path : resolve(cwd, path);
}

/**
 * Opens the store `where` names (a relative path resolved from `cwd`),
 * read-only unless the command `writes`: reading writes nothing (on SQLite it
 * works on read-only media and while another process holds a long write
 * transaction). Liveness conditions read the same from every open, writable
 * or not: `True` while the process that wrote them has the store open. A
 * database that is not a beehive store is
 * refused either way, and left untouched.
 * @throws {NoStoreError} `where` is a path where no file is.
 */
export async function openStore(where: string, cwd: string, writes: boolean): Promise<Store> {
  if (/^postgres(ql)?:\/\//i.test(where)) {
    // Loaded only for a url: a SQLite user needs no PostgreSQL driver.
    const { openPostgresStore } = await import("@beehive/beehive/postgres");
    // `?schema=name` picks the store's schema, as the store's identity names it.
    const url = new URL(where);
    const schema = url.searchParams.get("schema") ?? undefined;
    url.searchParams.delete("schema");
    return await openPostgresStore(url.href, {
      ...(schema === undefined ? {} : { schema }),
      readOnly: !writes,
    });
  }
  if (where === ":memory:") return await openSqliteStore(where);
  const path = resolvePath(where, cwd);
  if (!existsSync(path)) throw new NoStoreError(`no database at ${where}`);
  return await openSqliteStore(path, { readOnly: !writes });
}
