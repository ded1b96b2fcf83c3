/**
 * Store contract cases: finalizers set whole by `updateMetadata` and
 * `updateSpec` (how the Kubernetes API edits `metadata.finalizers`), in the
 * same version as the rest of the write; a deletion-pending row takes a
 * metadata write that clears them.
 *
 * @module
 */
import assert from "node:assert/strict";
import { type ContractCase, logCount, ref, Widget } from "./harness.ts";

/** Finalizers set whole by a metadata or spec write: how the Kubernetes API edits them. */
export const finalizerWriteCases: ContractCase[] = [
  {
    name:
      "updateMetadata and updateSpec with finalizers write the whole list in the same version; the same list writes nothing",
    async fn(h) {
      const s = await h.open();
      const created = await s.objects.create(Widget, { name: "a", spec: "{}", finalizers: ["x"] });
      const a = ref(Widget, created.id);
      const logged = await logCount(s, Widget);
      const added = await s.objects.updateMetadata(a, { finalizers: ["x", "y"] });
      assert.equal(added.changed, true);
      assert.deepEqual(added.object.finalizers, ["x", "y"]);
      assert.deepEqual(await s.objects.get(a.id), added.object);
      const same = await s.objects.updateMetadata(a, { finalizers: ["x", "y"] });
      assert.equal(same.changed, false);
      const both = await s.objects.updateSpec(a, {
        spec: '{"n":1}',
        finalizers: ["y"],
        labels: { k: "v" },
      });
      assert.equal(both.specChanged, true);
      assert.deepEqual(both.object.finalizers, ["y"]);
      assert.equal(await logCount(s, Widget), logged + 2);
      await assert.rejects(
        s.objects.updateMetadata(a, { finalizers: [""] }),
        (e: unknown) => e instanceof Error && e.name === "InvalidOptionError",
      );
      // A deletion-pending row takes a metadata write that clears them: it is then collectable.
      await s.deletionRequests.create(a);
      const cleared = await s.objects.updateMetadata(a, { finalizers: [] });
      assert.deepEqual(cleared.object.finalizers, []);
      assert.notEqual(cleared.object.deletionRequestedAt, undefined);
    },
  },
];
