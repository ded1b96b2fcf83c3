/**
 * The driver-cursor family: persisted scan positions.
 *
 * @module
 */
import type { DriverCursors } from "../../src/store.ts";
import { describe, isStorableText, quote, rejectWith } from "./_checks.ts";
import { q } from "./_query.ts";
import type { SqlSession, WriteScope } from "./_session.ts";

function checkCursorName(name: unknown): asserts name is string {
  if (typeof name !== "string" || name === "" || !isStorableText(name)) {
    throw new TypeError(
      `Cannot use driver cursor name: current value is ${
        describe(name)
      }, expected a non-empty, well-formed string`,
    );
  }
}

export class SqlDriverCursors implements DriverCursors {
  readonly #s: SqlSession;

  constructor(session: SqlSession) {
    this.#s = session;
  }

  get(name: string): Promise<number | undefined> {
    return rejectWith(() => {
      checkCursorName(name);
      return this.#s.read(() => getBody(name));
    });
  }

  set(name: string, cursor: number): Promise<void> {
    return rejectWith(() => {
      checkCursorName(name);
      if (typeof cursor !== "number" || !Number.isSafeInteger(cursor) || cursor < 0) {
        throw new TypeError(
          `Cannot set driver cursor ${quote(name)}: current value is ${
            describe(cursor)
          }, expected an integer >= 0`,
        );
      }
      return this.#s.write((scope) => setBody(scope, name, cursor));
    });
  }
}

function* getBody(name: string) {
  const row = yield* q.get("SELECT cursor FROM driver_cursors WHERE name = ?", name);
  return row === undefined ? undefined : Number(row.cursor);
}

function* setBody({ now }: WriteScope, name: string, cursor: number) {
  yield* q.run(
    `INSERT INTO driver_cursors (name, cursor, updated_at) VALUES (?, ?, ?)
     ON CONFLICT (name) DO UPDATE SET cursor = excluded.cursor, updated_at = excluded.updated_at
     WHERE excluded.cursor > driver_cursors.cursor`,
    name,
    cursor,
    now,
  );
}
