/**
 * One object watch's subscriber: its snapshot, its held changes when behind, and its
 * deliveries.
 *
 * @module
 */
import { type Engine, kindName } from "../engine/_engine.ts";
import { WatchTooNewError, WatchTooOldError } from "../model/errors.ts";
import type { LoadKey, Relations } from "../model/object.ts";
import { loadRelations } from "../engine/_relations.ts";
import type { GroupKind, LabelRequirement, ObjectId } from "../store.ts";
import { matchesLabels } from "../model/label_selector.ts";
import { nextRetry, TAIL_PAGE } from "./_pacing.ts";
import { asError, FailureLog, Feed, isTerminal } from "./_feed.ts";
import { collectChanges, mergeChange, type RawChange } from "./_changes.ts";
import { decodeChange, type Published, type Tailer, type TailSubscriber } from "./_tailer.ts";
import type { ObjectChange } from "./object_change.ts";
/** What scopes a subscriber. */
export interface FeedScope {
  /** `watch(id)`: only this id. */
  readonly id?: ObjectId;
  /** `watchOwnedObjects(owner)`: only this owner's children. */
  readonly owner?: ObjectId;
  /** `labelSelector`: only objects whose labels meet every requirement. */
  readonly selector?: readonly LabelRequirement[];
  /** A namespaced client's: only objects in this namespace (a namespace never changes). */
  readonly namespace?: string;
}

/**
 * One object watch: what it has not handed out yet, its replay, and its
 * deliveries. A stream that loads no relations and keeps up hands out each
 * drain's shared changes as they are, when its consumer pulls; one still
 * busy with earlier changes folds the new ones into its held map, latest
 * per object, and sorts that when its consumer pulls.
 */
export class ObjectFeed extends Feed<ObjectChange<unknown, unknown>> implements TailSubscriber {
  /** Deliveries at or below this position are dropped (the snapshot or resume position). */
  floor = 0;
  /** The number of the tailer's drain this stream still owes a take of; -1 for none. */
  owedDrain = -1;
  readonly #engine: Engine;
  readonly #gk: GroupKind;
  readonly #scope: FeedScope;
  readonly #load: readonly LoadKey[];
  /** Raw changes not yet decoded, latest per object: the streams that load relations. */
  readonly #pending = new Map<ObjectId, RawChange>();
  /**
   * The last drain's shared changes from `#sharedFrom` on, not pulled yet: a
   * stream that loads nothing and had nothing else waiting takes them as they are.
   */
  #shared: Published | undefined;
  #sharedFrom = 0;
  /** Decoded changes not yet handed out, latest per object: the streams that load none. */
  readonly #held = new Map<ObjectId, ObjectChange<unknown, unknown>>();
  readonly #failures: FailureLog;
  #tailer: Tailer | undefined;
  /** Set once the floor is known: until then everything published is held. */
  #open = false;
  /** The replay cursor of a resume; `undefined` once live. */
  #replay: number | undefined;
  #replayFirst = true;
  #retry = 0;
  /**
   * With a selector: the ids in the consumer's view (the snapshot's, then as
   * delivered; on a resume, those matching when the stream opened, then as delivered).
   */
  #selected: Set<ObjectId> | undefined;
  /** With a selector on a resume: the ids delivered as leaving (or never entering) the view. */
  #outside: Set<ObjectId> | undefined;
  /**
   * With a selector on a resume: the position the stream opened at. An object
   * changed at or below it may have matched at the resume point (its state there
   * is gone), so leaving is reported; one first changed above it matched at the
   * resume point only if it matched when the stream opened.
   */
  #openedAt = 0;

  constructor(engine: Engine, gk: GroupKind, scope: FeedScope, load: readonly LoadKey[]) {
    super();
    this.#engine = engine;
    this.#gk = gk;
    this.#scope = scope;
    this.#load = load;
    this.#failures = new FailureLog(engine, "a watch delivery", { kind: kindName(gk) });
  }

  /** Joins `tailer`: changes it publishes from now on are this stream's. */
  attach(tailer: Tailer): void {
    this.#tailer = tailer;
    tailer.add(this);
    this.onEnd(() => {
      this.#pending.clear();
      this.#held.clear();
      this.#shared = undefined;
      tailer.remove(this);
    });
  }

  /** Goes live above `floor` (the snapshot's position). */
  open(floor: number): void {
    this.floor = floor;
    this.#open = true;
  }

  /**
   * Sets a selector watch's starting view: the snapshot's ids; on a resume
   * (`openedAt` given), the ids matching when the stream opened at position
   * `openedAt`, whose state is the resume point's for every object not
   * changed since. Leaving the selection is then reported as `"Deleted"` only
   * for an object the consumer could have seen matching.
   */
  seedSelection(ids: readonly ObjectId[], openedAt?: number): void {
    this.#selected = new Set(ids);
    if (openedAt !== undefined) {
      this.#outside = new Set();
      this.#openedAt = openedAt;
    }
  }

  /** Whether change `c` finds its object in the consumer's view. */
  #inView(c: ObjectChange<unknown, unknown>): boolean {
    if (this.#selected!.has(c.id)) return true;
    const outside = this.#outside;
    if (outside === undefined || outside.has(c.id)) return false;
    // Changed between the resume point and the stream's opening: its state at the resume point
    // is unknown, so it may have matched — unless this change created it.
    return c.resourceVersion <= this.#openedAt && c.type !== "Added";
  }

  /**
   * What a selector watch hands out for changes in delivery order: an object
   * entering the selection as `"Added"`, one leaving it as `"Deleted"` (with
   * its state), one outside it not at all.
   */
  #select(
    changes: readonly ObjectChange<unknown, unknown>[],
  ): readonly ObjectChange<unknown, unknown>[] {
    const ns = this.#scope.namespace;
    const scoped = ns === undefined ? changes : changes.filter((c) => c.object?.namespace === ns);
    const selector = this.#scope.selector;
    if (selector === undefined) return scoped;
    const out: ObjectChange<unknown, unknown>[] = [];
    for (const c of scoped) {
      const inView = this.#inView(c);
      const matches = c.type !== "Deleted" && c.object !== undefined &&
        matchesLabels(selector, c.object.labels);
      if (matches) {
        this.#selected!.add(c.id);
        this.#outside?.delete(c.id);
        out.push(inView || c.type === "Added" ? c : Object.freeze({ ...c, type: "Added" }));
      } else {
        this.#selected!.delete(c.id);
        this.#outside?.add(c.id);
        if (inView) out.push(c.type === "Deleted" ? c : Object.freeze({ ...c, type: "Deleted" }));
      }
    }
    return out;
  }

  /** Starts with a replay of the log above `from` instead of a snapshot. */
  resume(from: number): void {
    this.#replay = from;
    this.open(from);
  }

  /**
   * Takes a drain's changes. A stream that will hand out the shared array
   * itself tells the tailer, which waits for it to be taken.
   */
  publish(batch: Published): void {
    if (this.ended) return;
    if (this.#load.length > 0) {
      this.#publishRaw(batch.raw);
      return;
    }
    let changes: readonly ObjectChange<unknown, unknown>[];
    try {
      changes = batch.changes;
    } catch (error) {
      // A codec failing other than with DecodeError: the stream cannot go on truthfully.
      this.fail(asError(error));
      return;
    }
    const scope = this.#scope;
    if (
      scope.id === undefined && scope.owner === undefined && scope.selector === undefined &&
      scope.namespace === undefined
    ) {
      const caughtUp = this.#open && this.#replay === undefined && this.#shared === undefined &&
        this.#held.size === 0 && !this.buffered;
      if (caughtUp) {
        let from = 0;
        while (from < changes.length && changes[from].resourceVersion <= this.floor) from++;
        if (from === changes.length) return;
        this.#shared = batch;
        this.#sharedFrom = from;
        this.#tailer?.owe(this);
        this.notify();
        return;
      }
      const shared = this.#shared;
      if (shared !== undefined) {
        // Not pulled before the next drain: it collapses with what follows.
        this.#shared = undefined;
        const held = shared.changes;
        for (let i = this.#sharedFrom; i < held.length; i++) this.#hold(held[i]);
      }
      for (const c of changes) this.#hold(c);
      if (changes.length > 0) this.notify();
      return;
    }
    let added = false;
    for (let i = 0; i < changes.length; i++) {
      const c = changes[i];
      if (scope.id !== undefined && c.id !== scope.id) continue;
      if (scope.owner !== undefined) {
        const owner = batch.ownerAt(i);
        if (owner === undefined) {
          this.#warnOwnerless(c.id, c.resourceVersion);
          continue;
        }
        if (owner !== scope.owner) continue;
      }
      this.#hold(c);
      added = true;
    }
    if (added) this.notify();
    return;
  }

  /** Folds a decoded change into the held ones: latest per object, a create stays `Added`. */
  #hold(c: ObjectChange<unknown, unknown>): void {
    const held = this.#held.get(c.id);
    if (held === undefined) {
      this.#held.set(c.id, c);
      return;
    }
    if (c.resourceVersion <= held.resourceVersion) return;
    const added = held.type === "Added" && c.type === "Modified";
    this.#held.set(c.id, added ? Object.freeze({ ...c, type: "Added" }) : c);
  }

  #publishRaw(changes: readonly RawChange[]): void {
    const scope = this.#scope;
    let added = false;
    for (const c of changes) {
      if (scope.id !== undefined && c.id !== scope.id) continue;
      if (scope.owner !== undefined) {
        if (c.owner === undefined) {
          this.#warnOwnerless(c.id, c.rv);
          continue;
        }
        if (c.owner !== scope.owner) continue;
      }
      this.#pending.set(c.id, mergeChange(this.#pending.get(c.id), c));
      added = true;
    }
    if (added) this.notify();
  }

  #warnOwnerless(id: ObjectId, rv: number): void {
    this.#tailer?.warnOnce(
      `owner:${rv}`,
      "beehive: a change reached an owner-scoped watch without its owner; skipping it",
      { kind: kindName(this.#gk), id, resourceVersion: rv },
    );
  }

  protected override idle(): boolean {
    return this.#load.length === 0 && this.#replay === undefined && this.#shared === undefined &&
      this.#held.size === 0;
  }

  /** Hands out the shared changes as they are, or the held ones sorted. */
  protected override produce(): void {
    if (this.#replay !== undefined) return;
    if (this.#shared !== undefined) {
      this.adopt(this.#shared.changes, this.#sharedFrom, this.#shared.answers);
      this.#shared = undefined;
      return;
    }
    if (this.#held.size === 0) return;
    const held = [...this.#held.values()].filter((c) => c.resourceVersion > this.floor);
    this.#held.clear();
    held.sort((a, b) => a.resourceVersion - b.resourceVersion);
    this.push(this.#select(held));
  }

  protected override taken(): void {
    this.#tailer?.taken(this);
  }

  override fail(error: Error): void {
    this.#replay = undefined;
    super.fail(error);
  }

  protected override async fill(): Promise<boolean> {
    if (this.#replay !== undefined && this.terminal === undefined) {
      await this.#replayStep(this.#replay);
      return true;
    }
    if (this.#shared !== undefined || this.#held.size > 0) {
      this.produce();
      return true;
    }
    if (this.#pending.size === 0) return false;
    const batch = [...this.#pending.values()].filter((c) => c.rv > this.floor);
    this.#pending.clear();
    batch.sort((a, b) => a.rv - b.rv);
    this.push(this.#select(await this.#decode(batch)));
    return true;
  }

  /** One replay page: gap entries above `cursor`, delivered before anything live. */
  async #replayStep(cursor: number): Promise<void> {
    const store = this.#engine.store;
    try {
      const page = await store.objectWrites.listSince(this.#gk, {
        after: cursor,
        limit: TAIL_PAGE,
      });
      if (cursor < page.trimmedThrough) {
        throw new WatchTooOldError(
          `Cannot resume the watch on ${
            kindName(this.#gk)
          } from ${cursor}: retention trimmed the log through ${page.trimmedThrough}; watch again without resumeFrom`,
        );
      }
      if (page.writes.length === 0 && this.#replayFirst) {
        const [head, latest] = await Promise.all([
          store.objectWrites.maxVersion(this.#gk),
          store.getLatestResourceVersion(),
        ]);
        if (cursor > Math.max(head, latest)) {
          throw new WatchTooNewError(
            `Cannot resume the watch on ${
              kindName(this.#gk)
            } from ${cursor}: this store has issued nothing above ${
              Math.max(head, latest)
            }; watch again without resumeFrom`,
          );
        }
      }
      const changes = await collectChanges(
        store,
        this.#gk,
        page.writes,
        { owners: this.#scope.owner !== undefined, only: this.#scope.id },
        (message, attrs) => this.#engine.log.warn(message, attrs),
      );
      if (this.ended || this.terminal !== undefined) return;
      const scoped = this.#scope.owner === undefined
        ? changes
        : changes.filter((c) => c.owner === this.#scope.owner);
      this.#retry = 0;
      this.#failures.succeeded();
      this.push(this.#select(await this.#decode(scoped)));
      this.#replayFirst = false;
      const end = page.writes.length === 0
        ? cursor
        : page.writes[page.writes.length - 1].resourceVersion;
      if (page.writes.length < TAIL_PAGE) {
        this.#replay = undefined;
        this.floor = end;
      } else {
        this.#replay = end;
      }
    } catch (error) {
      if (isTerminal(error)) throw error;
      this.#retry = nextRetry(this.#retry);
      this.#failures.failed(error, this.#retry);
      await this.sleep(this.#retry);
    }
  }

  /** Loads relations (retrying until it works or the stream ends), then decodes once. */
  async #decode(batch: readonly RawChange[]): Promise<ObjectChange<unknown, unknown>[]> {
    if (batch.length === 0) return [];
    let rels: Map<ObjectId, Relations> | undefined;
    if (this.#load.length > 0) {
      for (;;) {
        try {
          rels = await loadRelations(this.#engine.store, batch.map((c) => c.id), this.#load);
          this.#retry = 0;
          break;
        } catch (error) {
          // The tailer's cursor has moved past these: skipping would lose them.
          if (isTerminal(error)) throw error;
          if (this.ended || this.terminal !== undefined) return [];
          this.#retry = nextRetry(this.#retry);
          this.#failures.failed(error, this.#retry);
          await this.sleep(this.#retry);
          if (this.ended || this.terminal !== undefined) return [];
        }
      }
    }
    const codec = this.#engine.codec(this.#gk);
    const warn = (key: string, message: string, attrs: Record<string, unknown>) =>
      this.#tailer === undefined
        ? this.#engine.log.warn(message, attrs)
        : this.#tailer.warnOnce(key, message, attrs);
    const kind = kindName(this.#gk);
    const out: ObjectChange<unknown, unknown>[] = [];
    for (const c of batch) {
      let rel = rels?.get(c.id);
      if (rel !== undefined && c.op === "delete" && "owner" in rel) {
        // The owned_by edge cascaded away with the row; the image remembers it.
        rel = { ...rel, owner: c.row.owner ?? null };
      }
      const change = decodeChange(c, codec, rel, warn, kind);
      if (change !== undefined) out.push(change);
    }
    return out;
  }
}
