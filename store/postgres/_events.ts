/**
 * The event-log family: observations aggregated into runs per (object, category).
 *
 * @module
 */
import { InvalidEventError, InvalidOptionError } from "../../src/errors.ts";
import type {
  EventQuery,
  Events,
  EventsAddInput,
  EventsListSinceOptions,
  EventsListSinceResult,
  EventsSweepOptions,
  ObjectId,
  ObjectRef,
  RawEvent,
  Snapshot,
} from "../../src/store.ts";
import { isStorableText } from "../../src/_text.ts";
import { EVENT_CAP_BUDGET } from "../sql/_checks.ts";
import type { Db, PgRow, PgValue } from "./_core.ts";
import { cutoff } from "./_object_writes.ts";
import {
  assertKind,
  checkId,
  checkPage,
  checkRef,
  checkRetention,
  describe,
  objectNotFound,
  rejectWith,
} from "./_rows.ts";
import type { Session } from "./_session.ts";

const EVENT_COLUMNS =
  "id, object_id, category, type, reason, message, detail, count, first_at, last_at, resource_version";

/**
 * The kind gate and the timeline's newest run, in one read: a row whenever the
 * object exists (`run_id` NULL for an empty timeline), none when it does not.
 * "Newest" is append order (greatest id), not clock order.
 */
const ADD_PROBE_SQL = `SELECT o."group" AS "group", o.kind AS kind,
    e.id AS run_id, e.type AS type, e.reason AS reason
  FROM objects o LEFT JOIN events e ON e.id = (
    SELECT id FROM events WHERE object_id = o.id AND category = ? ORDER BY id DESC LIMIT 1)
  WHERE o.id = ?`;

const EXTEND_SQL = `UPDATE events SET count = count + 1, last_at = ?, message = ?, detail = ?,
  resource_version = ? WHERE id = ?`;

const INSERT_SQL = `INSERT INTO events (object_id, category, type, reason, message, detail, count,
  first_at, last_at, resource_version) VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?, ?)`;

function decodeEvent(row: PgRow): RawEvent {
  return {
    id: Number(row.id),
    objectId: Number(row.object_id),
    category: row.category as string,
    type: row.type as RawEvent["type"],
    reason: row.reason as string,
    message: row.message as string,
    detail: row.detail === null ? undefined : row.detail as string,
    count: Number(row.count),
    firstAt: new Date(Number(row.first_at)),
    lastAt: new Date(Number(row.last_at)),
    resourceVersion: Number(row.resource_version),
  };
}

function eventText(value: unknown, field: string, required: boolean): string {
  if (value === undefined && !required) return "";
  if (typeof value !== "string") {
    throw new InvalidEventError(
      `Cannot add event: its ${field} is ${describe(value)}, expected a string`,
    );
  }
  if (!isStorableText(value)) {
    throw new InvalidEventError(
      `Cannot add event: its ${field} ${
        JSON.stringify(value)
      } is not well-formed UTF-16 without NUL`,
    );
  }
  if (required && value === "") {
    throw new InvalidEventError(`Cannot add event: its ${field} is empty`);
  }
  return value;
}

function checkType(type: unknown, what: string): asserts type is RawEvent["type"] {
  if (type !== "Normal" && type !== "Warning") {
    throw new InvalidEventError(
      `Cannot ${what}: event type is ${describe(type)}, expected "Normal" or "Warning"`,
    );
  }
}

/**
 * A category as a query parameter. Text no write can store (a NUL, a lone surrogate) names no
 * run: it goes as NULL, which equals nothing, instead of failing to encode (or, for a lone
 * surrogate, encoding as U+FFFD and matching a category it is not).
 */
function categoryParam(category: string): string | null {
  return isStorableText(category) ? category : null;
}

/** Validates a query and renders its SQL and parameters. */
function renderList(id: ObjectId, query: EventQuery | undefined): [string, PgValue[]] {
  const q = query ?? {};
  const where = ["object_id = ?"];
  const params: PgValue[] = [id];
  if (q.category !== undefined) {
    if (typeof q.category !== "string") {
      throw new TypeError(`Cannot list events: category is ${describe(q.category)}`);
    }
    where.push("category = ?");
    params.push(categoryParam(q.category));
  }
  if (q.type !== undefined) {
    checkType(q.type, "list events");
    where.push("type = ?");
    params.push(q.type);
  }
  if (q.reason !== undefined && q.reason !== "") {
    if (typeof q.reason !== "string") {
      throw new TypeError(`Cannot list events: reason is ${describe(q.reason)}`);
    }
    where.push("reason = ?");
    params.push(q.reason);
  }
  if (q.since !== undefined) {
    if (!(q.since instanceof Date) || Number.isNaN(q.since.getTime())) {
      throw new TypeError(
        `Cannot list events: since is ${describe(q.since)}, expected a valid Date`,
      );
    }
    where.push("last_at >= ?");
    params.push(q.since.getTime());
  }
  let sql = `SELECT ${EVENT_COLUMNS} FROM events WHERE ${
    where.join(" AND ")
  } ORDER BY last_at DESC, id DESC`;
  const limit = q.limit ?? 0;
  if (typeof limit !== "number" || !Number.isSafeInteger(limit) || limit < 0) {
    throw new TypeError(
      `Cannot list events: limit is ${describe(limit)}, expected an integer >= 0`,
    );
  }
  if (limit > 0) {
    sql += " LIMIT ?";
    params.push(limit);
  }
  return [sql, params];
}

async function maxVersion(db: Db, id: ObjectId): Promise<number> {
  const row = await db.row(
    "SELECT COALESCE(MAX(resource_version), 0) FROM events WHERE object_id = ?",
    id,
  );
  return Number(row![0]);
}

async function raiseHorizon(
  db: Db,
  objectId: number,
  category: string,
  through: number,
): Promise<void> {
  await db.run(
    `INSERT INTO events_horizon (object_id, category, trimmed_through) VALUES (?, ?, ?)
     ON CONFLICT (object_id, category) DO UPDATE SET trimmed_through = excluded.trimmed_through
     WHERE excluded.trimmed_through > events_horizon.trimmed_through`,
    objectId,
    category,
    through,
  );
}

export class PostgresEvents implements Events {
  readonly #s: Session;

  constructor(session: Session) {
    this.#s = session;
  }

  add(ref: ObjectRef, input: EventsAddInput): Promise<void> {
    return rejectWith(() => {
      checkRef(ref);
      if (typeof input !== "object" || input === null) {
        throw new InvalidEventError(`Cannot add event: current value is ${describe(input)}`);
      }
      checkType(input.type, "add event");
      const reason = eventText(input.reason, "reason", true);
      const category = eventText(input.category, "category", false);
      const message = eventText(input.message, "message", false);
      if (input.detail !== undefined && typeof input.detail !== "string") {
        throw new TypeError(
          `Cannot add event: detail is ${describe(input.detail)}, expected JSON text`,
        );
      }
      // A lone surrogate cannot be stored as UTF-8: the detail would not read back as written.
      if (input.detail !== undefined && !isStorableText(input.detail)) {
        throw new InvalidEventError(
          `Cannot add event: its detail ${
            JSON.stringify(input.detail)
          } is not well-formed UTF-16 without NUL`,
        );
      }
      const detail = input.detail ?? null;
      return this.#s.write(async ({ db, now, draw }) => {
        const latest = await db.get(ADD_PROBE_SQL, category, ref.id);
        assertKind(ref, latest);
        const rv = draw();
        if (latest.run_id !== null && latest.type === input.type && latest.reason === reason) {
          await db.run(EXTEND_SQL, now, message, detail, rv, latest.run_id as number);
        } else {
          await db.run(
            INSERT_SQL,
            ref.id,
            category,
            input.type,
            reason,
            message,
            detail,
            now,
            now,
            rv,
          );
        }
      });
    });
  }

  getLatest(id: ObjectId, category: string): Promise<RawEvent | undefined> {
    return rejectWith(() => {
      checkId(id);
      if (typeof category !== "string") {
        throw new TypeError(`Cannot read events: category is ${describe(category)}`);
      }
      return this.#s.read(async (db) => {
        const row = await db.get(
          `SELECT ${EVENT_COLUMNS} FROM events
           WHERE object_id = ? AND category = ? ORDER BY id DESC LIMIT 1`,
          id,
          categoryParam(category),
        );
        return row === undefined ? undefined : decodeEvent(row);
      });
    });
  }

  list(id: ObjectId, query?: EventQuery): Promise<RawEvent[]> {
    return rejectWith(() => {
      checkId(id);
      const [sql, params] = renderList(id, query);
      return this.#s.read(async (db) => (await db.all(sql, ...params)).map(decodeEvent));
    });
  }

  listSince(id: ObjectId, options: EventsListSinceOptions): Promise<EventsListSinceResult> {
    return rejectWith(() => {
      checkId(id);
      const { after, limit } = checkPage(options);
      const category = options.category;
      if (category !== undefined && typeof category !== "string") {
        throw new TypeError(`Cannot read events: category is ${describe(category)}`);
      }
      return this.#s.readSnapshot(async (db) => {
        const events = limit <= 0 ? [] : (await db.all(
          `SELECT ${EVENT_COLUMNS} FROM events
           WHERE object_id = ? AND resource_version > ? ORDER BY resource_version LIMIT ?`,
          id,
          after,
          limit,
        )).map(decodeEvent);
        const h = category === undefined
          ? await db.get(
            "SELECT MAX(trimmed_through) AS t FROM events_horizon WHERE object_id = ?",
            id,
          )
          : await db.get(
            "SELECT trimmed_through AS t FROM events_horizon WHERE object_id = ? AND category = ?",
            id,
            categoryParam(category),
          );
        const trimmedThrough = h?.t === null || h === undefined ? 0 : Number(h.t);
        // The log cascades with its object: an empty page there means "gone", not "quiet".
        if (
          events.length === 0 && trimmedThrough === 0 &&
          await db.get("SELECT 1 FROM objects WHERE id = ?", id) === undefined
        ) throw objectNotFound(id);
        return { events, trimmedThrough };
      });
    });
  }

  maxVersion(id: ObjectId): Promise<number> {
    return rejectWith(() => {
      checkId(id);
      return this.#s.read((db) => maxVersion(db, id));
    });
  }

  snapshot(id: ObjectId, query?: EventQuery): Promise<Snapshot<RawEvent>> {
    return rejectWith(() => {
      checkId(id);
      const [sql, params] = renderList(id, query);
      return this.#s.readSnapshot(async (db) => ({
        items: (await db.all(sql, ...params)).map(decodeEvent),
        resourceVersion: await maxVersion(db, id),
      }));
    });
  }

  sweep(options: EventsSweepOptions): Promise<number> {
    return rejectWith(() => {
      const { perTimeline, maxAge } = checkRetention(options, ["perTimeline", "maxAge"]);
      if (!Number.isSafeInteger(perTimeline)) {
        throw new InvalidOptionError(
          `Cannot sweep events with perTimeline: current value is ${perTimeline}, expected an integer >= 0`,
        );
      }
      const capBudget = options.capBudget ?? 0;
      if (typeof capBudget !== "number" || !Number.isSafeInteger(capBudget)) {
        throw new TypeError(`Cannot sweep events: capBudget is ${describe(capBudget)}`);
      }
      const budget = capBudget > 0 ? capBudget : EVENT_CAP_BUDGET;
      return this.#s.write(async ({ db, now }) => {
        let deleted = 0;
        if (perTimeline > 0) {
          const timelines = await db.all(
            `SELECT object_id, category FROM events GROUP BY object_id, category
             HAVING COUNT(*) > ? LIMIT ?`,
            perTimeline,
            budget,
          );
          for (const t of timelines) {
            const objectId = Number(t.object_id);
            const category = t.category as string;
            const cut = (await db.get(
              `SELECT last_at, id FROM events WHERE object_id = ? AND category = ?
               ORDER BY last_at DESC, id DESC LIMIT 1 OFFSET ?`,
              objectId,
              category,
              perTimeline,
            ))!;
            const lastAt = Number(cut.last_at);
            const cutId = Number(cut.id);
            const through = (await db.get(
              `SELECT MAX(resource_version) AS v FROM events
               WHERE object_id = ? AND category = ? AND (last_at, id) <= (?::bigint, ?::bigint)`,
              objectId,
              category,
              lastAt,
              cutId,
            ))!.v;
            // The horizon rises in the same transaction as the trim it covers.
            await raiseHorizon(db, objectId, category, Number(through));
            deleted += await db.run(
              `DELETE FROM events WHERE object_id = ? AND category = ?
                 AND (last_at, id) <= (?::bigint, ?::bigint)`,
              objectId,
              category,
              lastAt,
              cutId,
            );
          }
        }
        if (maxAge > 0) {
          const horizon = cutoff(now, maxAge);
          const aged = await db.all(
            `SELECT object_id, category, MAX(resource_version) AS v FROM events
             WHERE last_at < ? GROUP BY object_id, category`,
            horizon,
          );
          for (const t of aged) {
            await raiseHorizon(db, Number(t.object_id), t.category as string, Number(t.v));
          }
          deleted += await db.run("DELETE FROM events WHERE last_at < ?", horizon);
        }
        return deleted;
      });
    });
  }
}
