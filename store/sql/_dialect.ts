/**
 * What truly differs between the SQL stores, as the shared families see it:
 * the SQL fragments each database spells its own way, how an id list or a
 * kind list is bound, error classification, and capability flags. Beginning,
 * committing and fencing a transaction are the dialect's side of the write
 * group (`_write_group.ts`); statements reach the database through the
 * session that drives a family body (`_query.ts`).
 *
 * @module
 */
import type { GroupKind, ObjectId } from "../../src/store.ts";
import type { LabelSetIds } from "./_label_set_ids.ts";

/** One SQL database's spelling and abilities. */
export interface Dialect {
  /** The store's name in messages ("SQLite", "PostgreSQL"). */
  readonly name: string;
  /** `col IN <this>`-style membership in a bound id list: ` IN (SELECT value FROM json_each(?))` or ` = ANY(?::bigint[])`. */
  readonly inIds: string;
  /** Binds an id list for {@linkcode Dialect.inIds} and {@linkcode Dialect.objectsOfIds}. */
  ids(ids: readonly ObjectId[]): unknown;
  /**
   * ` <source>` for a `FROM`: the rows of `objects` (under that name) whose ids
   * are bound as one list, each found by its key, one probe an id, so no plan
   * reads a kind or the table to find a few rows (`./_keyed.ts`).
   */
  readonly objectsOfIds: string;
  /**
   * ` <join>` after a row source: joins the `objects` row (under that name) whose
   * id is `key` (a column of the rows before it), found by its key, one probe a row.
   */
  objectAt(key: string): string;
  /** `col IN <this>`-style membership in a bound text list. */
  readonly inTexts: string;
  /** Binds a text list for {@linkcode Dialect.inTexts}. */
  texts(texts: readonly string[]): unknown;
  /**
   * Where the database binds arrays (PostgreSQL): a row source of one array
   * parameter per column, `FROM unnest(?::text[], …) AS alias (a, …)`, so many
   * rows go in one statement. Absent where each row is its own statement (SQLite).
   */
  readonly unnest?: (types: readonly string[], alias: string, columns: readonly string[]) => string;
  /**
   * A row source of a bound JSON object's entries as text columns `key` and
   * `value`: ` FROM json_each(?)` or ` FROM jsonb_each_text(?::jsonb)`.
   */
  readonly jsonEntries: string;
  /**
   * The value of one label of a row, from its `labels` JSON column: an
   * expression with one parameter, bound with {@linkcode Dialect.labelKey}
   * (`json_extract(col, ?)` or `(col::jsonb ->> ?::text)`); NULL when absent.
   */
  labelValue(column: string): string;
  /** Binds a label key for {@linkcode Dialect.labelValue}. */
  labelKey(key: string): string;
  /**
   * Whether one statement may write to several tables (PostgreSQL's
   * data-modifying `WITH`): a create then appends its log entry and indexes
   * its labels, and a settle appends its entry, without round trips of their
   * own. SQLite has no such statement.
   */
  readonly chainsInserts: boolean;
  /** A row-value membership in a bound kind list: `("group", kind) IN <this>`. */
  readonly inKinds: string;
  /** Binds a kind list for {@linkcode Dialect.inKinds} (one or more parameters). */
  kinds(kinds: readonly GroupKind[]): unknown[];
  /** A placeholder for an integer the database must not guess the type of: `?` or `?::bigint`. */
  readonly bigint: string;
  /** Null-safe inequality: `IS NOT` or `IS DISTINCT FROM`. */
  readonly isDistinct: string;
  /** The larger of two values: `max` or `GREATEST`. */
  readonly greatest: string;
  /** The `LIMIT` bound that means no limit. */
  readonly noLimit: number | null;
  /** An index hint after a table name (SQLite's `INDEXED BY`); empty where the planner takes none. */
  indexedBy(index: string): string;
  /** A join whose tables are scanned in the order written (SQLite's `CROSS JOIN`), or a plain `JOIN`. */
  readonly joinInOrder: string;
  /** A row lock for a read inside a write transaction (` FOR UPDATE`); empty where the transaction already holds the database. */
  readonly forUpdate: string;
  /**
   * Whether statements run in-process (SQLite): a statement, or a read
   * transaction around several, costs no round trip, so a family may take one
   * snapshot, or read with two point lookups, where a server dialect saves
   * the round trip instead.
   */
  readonly inProcess: boolean;
  /**
   * The ids of label sets this open's writer knows exist, where it keeps
   * them (`_label_set_ids.ts`: SQLite, whose writer is the only one between
   * its checks); undefined where each create finds its set in its statement.
   */
  readonly labelSetIds?: LabelSetIds;
  /** Whether a driver error is a unique-constraint violation. */
  isUniqueViolation(error: unknown): boolean;
  /** Whether a driver error is a foreign-key violation. */
  isForeignKeyViolation(error: unknown): boolean;
}
