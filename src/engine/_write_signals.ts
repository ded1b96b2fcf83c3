/**
 * In-memory commit signals: which kinds and which objects' event logs a
 * committed write touched. Watches and the dependency waker listen; a signal
 * is a latency hint — every listener also has a periodic read behind it.
 * While anyone listens, a commit from another process (as the store reports
 * it, without saying what moved) wakes every listener.
 *
 * @module
 */
import { kindKey } from "../model/_kind_keys.ts";
import type { GroupKind, ObjectId } from "../store.ts";

type Listener = () => void;

function add<K>(map: Map<K, Set<Listener>>, key: K, fn: Listener): () => void {
  let set = map.get(key);
  if (set === undefined) map.set(key, set = new Set());
  set.add(fn);
  return () => {
    set.delete(fn);
    if (set.size === 0 && map.get(key) === set) map.delete(key);
  };
}

/**
 * Calls every listener in `set` as it stood when called: one a listener adds
 * is not called, one it removes still is. A single listener (a kind's
 * controller or tailer, the common case on every commit) is called without
 * copying the set.
 */
function fire(set: Set<Listener> | undefined): void {
  if (set === undefined || set.size === 0) return;
  if (set.size === 1) {
    for (const fn of set) {
      fn();
      break;
    }
    return;
  }
  for (const fn of [...set]) fn();
}

/** The other Beehives of one alone on its store handle. */
const NO_PEERS: readonly WriteSignals[] = Object.freeze([]);

/** Subscribes to other processes' commits; returns the unsubscribe. */
export type ExternalCommits = (fn: () => void) => () => void;

/** What a Beehive hears of a write another Beehive on its store handle made (with the object's id). */
export type PeerWrite = (ref: GroupKind & { readonly id?: ObjectId }) => void;

/**
 * The signals of every Beehive built on one store handle in this process: a
 * write one of them commits is news to the others, which share the handle's
 * origin and so cannot tell it from their own in the log.
 */
const peersByStore = new WeakMap<object, Set<WeakRef<WriteSignals>>>();

/** The commit signals of one Beehive. Listeners run synchronously and must only schedule work. */
export class WriteSignals {
  readonly #kinds = new Map<string, Set<Listener>>();
  readonly #anyKind = new Set<Listener>();
  readonly #externalOnly = new Set<Listener>();
  readonly #events = new Map<ObjectId, Set<Listener>>();
  readonly #closed = new Set<Listener>();
  readonly #external: ExternalCommits | undefined;
  readonly #peers: Set<WeakRef<WriteSignals>> | undefined;
  readonly #self = new WeakRef(this);
  readonly #onPeerWrite: PeerWrite | undefined;
  #listening = 0;
  #unsubscribe: (() => void) | undefined;

  /**
   * `store`: the handle this Beehive writes through; the other Beehives on it
   * in this process hear its writes, and it theirs (`onPeerWrite`).
   */
  constructor(external?: ExternalCommits, store?: object, onPeerWrite?: PeerWrite) {
    this.#external = external;
    this.#onPeerWrite = onPeerWrite;
    if (store !== undefined) {
      let peers = peersByStore.get(store);
      if (peers === undefined) peersByStore.set(store, peers = new Set());
      peers.add(this.#self);
      this.#peers = peers;
    }
  }

  /**
   * The other live Beehives' signals on this store handle: none, with no list
   * made, when this one is alone on it (the common case, asked on every commit).
   */
  #others(): readonly WriteSignals[] {
    const peers = this.#peers;
    if (peers === undefined || peers.size === 0 || (peers.size === 1 && peers.has(this.#self))) {
      return NO_PEERS;
    }
    const others: WriteSignals[] = [];
    for (const ref of [...peers]) {
      const peer = ref.deref();
      if (peer === undefined) peers.delete(ref);
      else if (peer !== this) others.push(peer);
    }
    return others;
  }

  /** Counts a listener in; the first one subscribes to other processes' commits. */
  #counted(off: () => void): () => void {
    if (this.#listening++ === 0 && this.#external !== undefined) {
      this.#unsubscribe = this.#external(() => this.#externalCommit());
    }
    let done = false;
    return () => {
      if (done) return;
      done = true;
      off();
      if (--this.#listening === 0) {
        this.#unsubscribe?.();
        this.#unsubscribe = undefined;
      }
    };
  }

  /** Another process committed something: every listener reads to learn what. */
  #externalCommit(): void {
    for (const set of [...this.#kinds.values()]) fire(set);
    fire(this.#anyKind);
    for (const set of [...this.#events.values()]) fire(set);
    fire(this.#externalOnly);
  }

  /** Calls `fn` after each commit that logged a write of kind `gk`. */
  onKind(gk: GroupKind, fn: Listener): () => void {
    return this.#counted(add(this.#kinds, kindKey(gk), fn));
  }

  /** Calls `fn` after each commit that logged a write of any kind. */
  onAnyKind(fn: Listener): () => void {
    const entry = () => fn();
    this.#anyKind.add(entry);
    return this.#counted(() => this.#anyKind.delete(entry));
  }

  /** Calls `fn` after each commit another process made (as the store reports it). */
  onExternalCommit(fn: Listener): () => void {
    const entry = () => fn();
    this.#externalOnly.add(entry);
    return this.#counted(() => this.#externalOnly.delete(entry));
  }

  /** Calls `fn` after each commit that added to `id`'s event log. */
  onEvents(id: ObjectId, fn: Listener): () => void {
    return this.#counted(add(this.#events, id, fn));
  }

  /** Calls `fn` once when the Beehive stops. */
  onClose(fn: Listener): () => void {
    this.#closed.add(fn);
    return () => this.#closed.delete(fn);
  }

  /** A commit logged a write of kind `gk` (of object `gk.id`, when given). */
  kindWritten(gk: GroupKind & { readonly id?: ObjectId }): void {
    this.#kindWritten(gk);
    for (const peer of this.#others()) {
      peer.#kindWritten(gk);
      peer.#onPeerWrite?.(gk);
    }
  }

  #kindWritten(gk: GroupKind): void {
    fire(this.#kinds.get(kindKey(gk)));
    fire(this.#anyKind);
  }

  /** A commit added to `id`'s event log. */
  eventsWritten(id: ObjectId): void {
    fire(this.#events.get(id));
    for (const peer of this.#others()) fire(peer.#events.get(id));
  }

  /** The Beehive stopped: tell every close listener once. */
  close(): void {
    this.#peers?.delete(this.#self);
    const fns = [...this.#closed];
    this.#closed.clear();
    for (const fn of fns) fn();
  }
}
