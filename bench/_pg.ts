/**
 * The `pg` the store itself imports (the repository's `node_modules`), for
 * benchmarks under `bench/peers/`, where a bare `pg` would resolve to the
 * queues' own copy in `bench/peers/node_modules`: the floor and the
 * statement counts then run on the client the store runs on.
 *
 * @module
 */
import pg from "pg";

export default pg;
