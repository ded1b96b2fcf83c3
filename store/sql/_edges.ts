/**
 * The edges family.
 *
 * @module
 */
import type {
  EdgeKey,
  Edges,
  EdgesAddResult,
  EdgesDeleteResult,
  IncomingEdgeQuery,
  ObjectId,
  ObjectRef,
  Relation,
} from "../../src/store.ts";
import {
  checkId,
  checkIds,
  checkRelation,
  describe,
  objectNotFound,
  rejectWith,
} from "./_checks.ts";
import type { Dialect } from "./_dialect.ts";
import { InvalidOptionError } from "../../src/model/errors.ts";
import { type Q, q } from "./_query.ts";
import { ID_CHUNK, type Row, truthy } from "./_rows.ts";
import type { SqlSession } from "./_session.ts";

function checkEdge(edge: unknown): asserts edge is EdgeKey {
  const e = edge as EdgeKey;
  if (typeof e !== "object" || e === null) {
    throw new TypeError(
      `Cannot use edge: current value is ${describe(edge)}, expected { fromId, toId, relation }`,
    );
  }
  checkId(e.fromId, "fromId");
  checkId(e.toId, "toId");
  checkRelation(e.relation);
}

/** Decodes `id, group, kind` columns. */
export function decodeRef(row: Row): ObjectRef {
  return { id: Number(row.id), group: row.group as string, kind: row.kind as string };
}

/**
 * The deletion-pending `depends_on` targets of `fromIds`, excluding self-edges: read
 * from the edges of `fromIds` (`IS TRUE` keeps the deleting rows' index out of the plan,
 * see `./_keyed.ts`).
 */
export function* unblockedTargets(d: Dialect, fromIds: readonly ObjectId[]): Q<ObjectRef[]> {
  const seen = new Map<ObjectId, ObjectRef>();
  for (let i = 0; i < fromIds.length; i += ID_CHUNK) {
    const rows = yield* q.all(
      `SELECT DISTINCT t.id AS id, t."group" AS "group", t.kind AS kind
       FROM edges e JOIN objects t ON t.id = e.to_id
       WHERE e.from_id${d.inIds} AND e.relation = 'depends_on'
         AND e.to_id <> e.from_id AND (t.deletion_requested_at IS NOT NULL) IS TRUE
       ORDER BY t.id`,
      d.ids(fromIds.slice(i, i + ID_CHUNK)),
    );
    for (const row of rows) seen.set(Number(row.id), decodeRef(row));
  }
  return [...seen.values()].sort((a, b) => a.id - b.id);
}

const NEW_EDGE = `NOT EXISTS (SELECT 1 FROM edges
  WHERE from_id = ? AND to_id = ? AND relation = 'depends_on')`;

export class SqlEdges implements Edges {
  readonly #s: SqlSession;

  constructor(session: SqlSession) {
    this.#s = session;
  }

  add(edge: EdgeKey): Promise<EdgesAddResult> {
    return rejectWith(() => {
      checkEdge(edge);
      const { fromId, toId, relation } = edge;
      const d = this.#s.dialect;
      return this.#s.write(() => addBody(d, fromId, toId, relation));
    });
  }

  delete(edge: EdgeKey): Promise<EdgesDeleteResult> {
    return rejectWith(() => {
      checkEdge(edge);
      const { fromId, toId, relation } = edge;
      return this.#s.write(() => deleteBody(fromId, toId, relation));
    });
  }

  deleteFinalizingDependsOn(toId: ObjectId): Promise<void> {
    return rejectWith(() => {
      checkId(toId, "toId");
      return this.#s.write(() => deleteFinalizingBody(toId));
    });
  }

  hasIncoming(id: ObjectId): Promise<boolean> {
    return rejectWith(() => {
      checkId(id);
      return this.#s.read(() => hasIncomingBody(id));
    });
  }

  listIncoming(query: IncomingEdgeQuery): Promise<ObjectRef[]> {
    return rejectWith(() => {
      checkId(query?.toId, "toId");
      checkRelation(query.relation);
      return this.#s.read(() => incomingBody(query));
    });
  }

  listOutgoing(fromId: ObjectId, relation: Relation): Promise<ObjectRef[]> {
    return rejectWith(() => {
      checkId(fromId, "fromId");
      checkRelation(relation);
      return this.#s.read(() => outgoingBody(fromId, relation));
    });
  }

  groupIncomingByIds(
    toIds: readonly ObjectId[],
    relation: Relation,
  ): Promise<Map<ObjectId, ObjectRef[]>> {
    return rejectWith(() => {
      checkIds(toIds, "toIds");
      checkRelation(relation);
      const d = this.#s.dialect;
      return this.#s.read(() => group(d, toIds, relation, "to_id", "from_id"));
    });
  }

  groupOutgoingByIds(
    fromIds: readonly ObjectId[],
    relation: Relation,
  ): Promise<Map<ObjectId, ObjectRef[]>> {
    return rejectWith(() => {
      checkIds(fromIds, "fromIds");
      checkRelation(relation);
      const d = this.#s.dialect;
      return this.#s.read(() => group(d, fromIds, relation, "from_id", "to_id"));
    });
  }
}

const END_SQL =
  `SELECT id, "group", kind, deletion_requested_at, namespace FROM objects WHERE id = ?`;

/**
 * Both ends of a new edge, checked to exist; returns both rows. In-process, two
 * point lookups; over a network, one statement for both.
 */
function* bothEnds(d: Dialect, fromId: ObjectId, toId: ObjectId): Q<{ from: Row; to: Row }> {
  if (d.inProcess) {
    const from = yield* q.get(END_SQL, fromId);
    if (from === undefined) throw objectNotFound(fromId);
    const to = yield* q.get(END_SQL, toId);
    if (to === undefined) throw objectNotFound(toId);
    return { from, to };
  }
  const rows = yield* q.all(
    `SELECT id, "group", kind, deletion_requested_at, namespace FROM${d.objectsOfIds}`,
    d.ids([fromId, toId]),
  );
  const from = rows.find((r) => Number(r.id) === fromId);
  if (from === undefined) throw objectNotFound(fromId);
  const to = rows.find((r) => Number(r.id) === toId);
  if (to === undefined) throw objectNotFound(toId);
  return { from, to };
}

/**
 * Refuses an owner in another namespace: an owner is in its child's namespace or
 * cluster-scoped (`""`), as in Kubernetes.
 * @throws {InvalidOptionError}
 */
function checkOwnerScope(from: Row, to: Row): void {
  const child = from.namespace as string;
  const owner = to.namespace as string;
  if (owner === "" || owner === child) return;
  throw new InvalidOptionError(
    `Cannot make object ${from.id} (${
      child === "" ? "cluster-scoped" : `namespace "${child}"`
    }) owned by object ${to.id} (namespace "${owner}"): an owner must be in its child's namespace or cluster-scoped`,
  );
}

function* group(
  d: Dialect,
  ids: readonly ObjectId[],
  relation: Relation,
  key: "to_id" | "from_id",
  other: "to_id" | "from_id",
): Q<Map<ObjectId, ObjectRef[]>> {
  const out = new Map<ObjectId, ObjectRef[]>();
  // Deduplicated first: an id named in two chunks would otherwise list its edges twice.
  const unique = [...new Set(ids)];
  for (let i = 0; i < unique.length; i += ID_CHUNK) {
    const rows = yield* q.all(
      `SELECT e.${key} AS route, e.${other} AS id, o."group" AS "group", o.kind AS kind
       FROM edges e JOIN objects o ON o.id = e.${other}
       WHERE e.${key}${d.inIds} AND e.relation = ?
       ORDER BY e.${key}, e.${other}`,
      d.ids(unique.slice(i, i + ID_CHUNK)),
      relation,
    );
    for (const row of rows) {
      const route = Number(row.route);
      let list = out.get(route);
      if (list === undefined) out.set(route, list = []);
      list.push(decodeRef(row));
    }
  }
  return out;
}

function* addBody(d: Dialect, fromId: ObjectId, toId: ObjectId, relation: Relation) {
  const { from, to } = yield* bothEnds(d, fromId, toId);
  if (relation === "owned_by") checkOwnerScope(from, to);
  let stamped = false;
  if (relation === "depends_on" && fromId !== toId) {
    // The stamp and the watermark reset happen only for a new edge, before
    // the insert: a stamp must never be separable from its edge.
    stamped = (yield* q.run(
      `UPDATE objects SET reconcile_owed = reconcile_owed + 1 WHERE id = ? AND ${NEW_EDGE}`,
      fromId,
      fromId,
      toId,
    )) > 0;
    if (stamped) {
      yield* q.run("DELETE FROM dependency_watermarks WHERE object_id = ?", fromId);
    }
  }
  yield* q.run(
    `INSERT INTO edges (from_id, to_id, relation) VALUES (?, ?, ?) ON CONFLICT DO NOTHING`,
    fromId,
    toId,
    relation,
  );
  return {
    to: { group: to.group as string, kind: to.kind as string },
    toDeleting: to.deletion_requested_at !== null,
    reconcileOwedStamped: stamped,
  };
}

function* deleteBody(fromId: ObjectId, toId: ObjectId, relation: Relation): Q<EdgesDeleteResult> {
  const removed = yield* q.run(
    "DELETE FROM edges WHERE from_id = ? AND to_id = ? AND relation = ?",
    fromId,
    toId,
    relation,
  );
  if (removed === 0 || relation !== "depends_on") return { to: undefined, unblocked: false };
  const row = yield* q.get(
    `SELECT t."group" AS "group", t.kind AS kind,
       t.deletion_requested_at IS NOT NULL AS to_pending,
       (SELECT deletion_requested_at IS NOT NULL FROM objects WHERE id = ?) AS from_pending
     FROM objects t WHERE t.id = ?`,
    fromId,
    toId,
  );
  // from_pending is NULL when the source is gone: only a source still live unblocks.
  if (
    row === undefined || !truthy(row.to_pending) ||
    !(row.from_pending === 0 || row.from_pending === false)
  ) {
    return { to: undefined, unblocked: false };
  }
  return { to: { group: row.group as string, kind: row.kind as string }, unblocked: true };
}

function* deleteFinalizingBody(toId: ObjectId) {
  yield* q.run(
    `DELETE FROM edges WHERE to_id = ? AND relation = 'depends_on' AND EXISTS (
       SELECT 1 FROM objects o WHERE o.id = edges.from_id AND o.deletion_requested_at IS NOT NULL)`,
    toId,
  );
}

function* hasIncomingBody(id: ObjectId) {
  const row = yield* q.get(
    `SELECT EXISTS (SELECT 1 FROM edges e WHERE e.to_id = ? AND (e.relation = 'owned_by'
       OR (SELECT o.deletion_requested_at IS NULL FROM objects o WHERE o.id = e.from_id)
         IS NOT FALSE)) AS v`,
    id,
  );
  return truthy(row!.v);
}

function* incomingBody(query: IncomingEdgeQuery) {
  return (yield* q.all(
    `SELECT e.from_id AS id, o."group" AS "group", o.kind AS kind
     FROM edges e JOIN objects o ON o.id = e.from_id
     WHERE e.to_id = ? AND e.relation = ? ORDER BY e.from_id`,
    query.toId,
    query.relation,
  )).map(decodeRef);
}

function* outgoingBody(fromId: ObjectId, relation: Relation) {
  return (yield* q.all(
    `SELECT e.to_id AS id, o."group" AS "group", o.kind AS kind
     FROM edges e JOIN objects o ON o.id = e.to_id
     WHERE e.from_id = ? AND e.relation = ? ORDER BY e.to_id`,
    fromId,
    relation,
  )).map(decodeRef);
}
