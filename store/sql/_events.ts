/**
 * The event-log family: observations aggregated into runs per (object, category).
 *
 * @module
 */
import { InvalidEventError, InvalidOptionError } from "../../src/model/errors.ts";
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
import { isStorableText } from "../../src/model/_text.ts";
import {
  assertKind,
  checkId,
  checkPage,
  checkRef,
  checkRetention,
  describe,
  EVENT_CAP_BUDGET,
  objectNotFound,
  quote,
  rejectWith,
} from "./_checks.ts";
import type { Dialect } from "./_dialect.ts";
import { type Q, q } from "./_query.ts";
import type { Row } from "./_rows.ts";
import type { SqlSession, WriteScope } from "./_session.ts";

// The namespace is the object's (events go with their object): one primary-key lookup a row.
const EVENT_COLUMNS =
  `id, object_id, category, type, reason, message, detail, count, first_at, last_at, resource_version,
  (SELECT namespace FROM objects WHERE objects.id = events.object_id) AS namespace`;

/**
 * The kind gate and the timeline's newest run, in one read: a row whenever the
 * object exists (`run_id` NULL for an empty timeline), none when it does not.
 * "Newest" is append order (greatest id), not clock order.
 */
const addProbe = (d: Dialect) =>
  `SELECT o."group" AS "group", o.kind AS kind,
    e.id AS run_id, e.type AS type, e.reason AS reason
  FROM objects o LEFT JOIN events e ON e.id = (
    SELECT id FROM events${d.indexedBy("idx_events_latest")}
    WHERE object_id = o.id AND category = ? ORDER BY id DESC LIMIT 1)
  WHERE o.id = ?`;

const EXTEND_SQL = `UPDATE events SET count = count + 1, last_at = ?, message = ?, detail = ?,
  resource_version = ? WHERE id = ?`;

const INSERT_COLUMNS =
  "object_id, category, type, reason, message, detail, count, first_at, last_at, resource_version";
/** A new run under an id the store hands out (SQLite). */
const INSERT_WITH_ID_SQL =
  `INSERT INTO events (id, ${INSERT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?)`;
/** A new run under the id the database assigns (PostgreSQL). */
const INSERT_SQL = `INSERT INTO events (${INSERT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?, ?)`;

function decodeEvent(row: Row): RawEvent {
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
    namespace: (row.namespace as string | null) ?? "",
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
      `Cannot add event: its ${field} ${quote(value)} is not well-formed UTF-16 without NUL`,
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
function renderList(id: ObjectId, query: EventQuery | undefined): [string, unknown[]] {
  const q = query ?? {};
  const where = ["object_id = ?"];
  const params: unknown[] = [id];
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

function* maxVersion(id: ObjectId): Q<number> {
  const row = yield* q.row(
    "SELECT COALESCE(MAX(resource_version), 0) FROM events WHERE object_id = ?",
    id,
  );
  return Number(row![0]);
}

function* raiseHorizon(objectId: number, category: string, through: number): Q<void> {
  yield* q.run(
    `INSERT INTO events_horizon (object_id, category, trimmed_through) VALUES (?, ?, ?)
     ON CONFLICT (object_id, category) DO UPDATE SET trimmed_through = excluded.trimmed_through
     WHERE excluded.trimmed_through > events_horizon.trimmed_through`,
    objectId,
    category,
    through,
  );
}

/** The integer instant `last_at < cutoff` compares with, for a fractional age too. */
function cutoff(now: number, maxAge: number): number {
  return Math.ceil(now - maxAge);
}

export class SqlEvents implements Events {
  readonly #s: SqlSession;
  readonly #addProbe: string;
  readonly #latest: string;
  readonly #since: string;
  readonly #cutAt: string;

  constructor(session: SqlSession) {
    this.#s = session;
    const d = session.dialect;
    this.#addProbe = addProbe(d);
    this.#latest = `SELECT ${EVENT_COLUMNS} FROM events${d.indexedBy("idx_events_latest")}
      WHERE object_id = ? AND category = ? ORDER BY id DESC LIMIT 1`;
    this.#since = `SELECT ${EVENT_COLUMNS} FROM events${d.indexedBy("idx_events_object_rv")}
      WHERE object_id = ? AND resource_version > ? ORDER BY resource_version LIMIT ?`;
    this.#cutAt = `(last_at, id) <= (${d.bigint}, ${d.bigint})`;
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
      // Text a store cannot keep as written (a lone surrogate, a NUL) would not read back.
      if (input.detail !== undefined && !isStorableText(input.detail)) {
        throw new InvalidEventError(
          `Cannot add event: its detail ${
            quote(input.detail)
          } is not well-formed UTF-16 without NUL`,
        );
      }
      const detail = input.detail ?? null;
      const probe = this.#addProbe;
      return this.#s.write((scope) =>
        addBody(scope, probe, ref, input, reason, category, message, detail)
      );
    });
  }

  getLatest(id: ObjectId, category: string): Promise<RawEvent | undefined> {
    return rejectWith(() => {
      checkId(id);
      if (typeof category !== "string") {
        throw new TypeError(`Cannot read events: category is ${describe(category)}`);
      }
      const latest = this.#latest;
      return this.#s.read(() => latestBody(latest, id, category));
    });
  }

  list(id: ObjectId, query?: EventQuery): Promise<RawEvent[]> {
    return rejectWith(() => {
      checkId(id);
      const [sql, params] = renderList(id, query);
      return this.#s.read(() => listBody(sql, params));
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
      const since = this.#since;
      return this.#s.readSnapshot(() => sinceBody(since, id, after, limit, category));
    });
  }

  maxVersion(id: ObjectId): Promise<number> {
    return rejectWith(() => {
      checkId(id);
      return this.#s.read(() => maxVersion(id));
    });
  }

  snapshot(id: ObjectId, query?: EventQuery): Promise<Snapshot<RawEvent>> {
    return rejectWith(() => {
      checkId(id);
      const [sql, params] = renderList(id, query);
      return this.#s.readSnapshot(() => snapshotBody(sql, params, id));
    });
  }

  sweep(options: EventsSweepOptions): Promise<number> {
    return rejectWith(() => {
      const { perTimeline, maxAge } = checkRetention(options, ["perTimeline", "maxAge"]);
      // A run count: a fraction would reach the database as a non-integer OFFSET.
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
      const cutAt = this.#cutAt;
      return this.#s.write((scope) => sweepBody(scope, cutAt, perTimeline, maxAge, budget));
    });
  }
}

function* addBody(
  scope: WriteScope,
  probe: string,
  ref: ObjectRef,
  input: EventsAddInput,
  reason: string,
  category: string,
  message: string,
  detail: string | null,
) {
  const now = scope.now;
  const latest = yield* q.get(probe, category, ref.id);
  assertKind(ref, latest);
  const rv = scope.draw();
  if (latest.run_id !== null && latest.type === input.type && latest.reason === reason) {
    yield* q.run(EXTEND_SQL, now, message, detail, rv, latest.run_id);
    return;
  }
  const id = scope.peekId("events");
  const values = [ref.id, category, input.type, reason, message, detail, now, now, rv];
  if (id === undefined) {
    yield* q.run(INSERT_SQL, ...values);
  } else {
    yield* q.run(INSERT_WITH_ID_SQL, id, ...values);
    scope.takeId("events");
  }
}

function* latestBody(latest: string, id: ObjectId, category: string) {
  const row = yield* q.get(latest, id, categoryParam(category));
  return row === undefined ? undefined : decodeEvent(row);
}

function* listBody(sql: string, params: unknown[]) {
  return (yield* q.all(sql, ...params)).map(decodeEvent);
}

function* sinceBody(
  since: string,
  id: ObjectId,
  after: number,
  limit: number,
  category: string | undefined,
) {
  const events = limit <= 0 ? [] : (yield* q.all(since, id, after, limit)).map(decodeEvent);
  const h = category === undefined
    ? yield* q.get(
      "SELECT MAX(trimmed_through) AS t FROM events_horizon WHERE object_id = ?",
      id,
    )
    : yield* q.get(
      "SELECT trimmed_through AS t FROM events_horizon WHERE object_id = ? AND category = ?",
      id,
      categoryParam(category),
    );
  const trimmedThrough = h?.t === null || h === undefined ? 0 : Number(h.t);
  // The log cascades with its object: an empty page there means "gone", not "quiet".
  if (
    events.length === 0 && trimmedThrough === 0 &&
    (yield* q.get("SELECT 1 FROM objects WHERE id = ?", id)) === undefined
  ) throw objectNotFound(id);
  return { events, trimmedThrough };
}

function* snapshotBody(sql: string, params: unknown[], id: ObjectId) {
  const items = (yield* q.all(sql, ...params)).map(decodeEvent);
  return { items, resourceVersion: yield* maxVersion(id) };
}

function* sweepBody(
  scope: WriteScope,
  cutAt: string,
  perTimeline: number,
  maxAge: number,
  budget: number,
) {
  let deleted = 0;
  if (perTimeline > 0) {
    const timelines = yield* q.all(
      `SELECT object_id, category FROM events GROUP BY object_id, category
       HAVING COUNT(*) > ? LIMIT ?`,
      perTimeline,
      budget,
    );
    for (const t of timelines) {
      const objectId = Number(t.object_id);
      const category = t.category as string;
      const cut = (yield* q.get(
        `SELECT last_at, id FROM events WHERE object_id = ? AND category = ?
         ORDER BY last_at DESC, id DESC LIMIT 1 OFFSET ?`,
        objectId,
        category,
        perTimeline,
      ))!;
      const lastAt = Number(cut.last_at);
      const cutId = Number(cut.id);
      const through = (yield* q.get(
        `SELECT MAX(resource_version) AS v FROM events
         WHERE object_id = ? AND category = ? AND ${cutAt}`,
        objectId,
        category,
        lastAt,
        cutId,
      ))!.v;
      // The horizon rises in the same transaction as the trim it covers.
      yield* raiseHorizon(objectId, category, Number(through));
      deleted += yield* q.run(
        `DELETE FROM events WHERE object_id = ? AND category = ? AND ${cutAt}`,
        objectId,
        category,
        lastAt,
        cutId,
      );
    }
  }
  if (maxAge > 0) {
    const horizon = cutoff(scope.now, maxAge);
    const aged = yield* q.all(
      `SELECT object_id, category, MAX(resource_version) AS v FROM events
       WHERE last_at < ? GROUP BY object_id, category`,
      horizon,
    );
    for (const t of aged) {
      yield* raiseHorizon(Number(t.object_id), t.category as string, Number(t.v));
    }
    deleted += yield* q.run("DELETE FROM events WHERE last_at < ?", horizon);
  }
  return deleted;
}
