/**
 * Store contract cases: managed fields, the Kubernetes API's record of which
 * manager set which fields — kept whole with the row as JSON text (`"[]"`
 * when none), written on create, with a spec write and with a metadata write
 * (a change alone is a metadata change: one version, one update entry), and
 * carried by a delete entry's row image.
 *
 * @module
 */
import assert from "node:assert/strict";
import { type ContractCase, logCount, ref, Widget } from "./harness.ts";

const ENTRY = JSON.stringify([{
  manager: "kubectl",
  operation: "Apply",
  fieldsType: "FieldsV1",
  fieldsV1: { "f:spec": { "f:n": {} } },
}]);
const OTHER = JSON.stringify([{ manager: "app", operation: "Update", fieldsV1: {} }]);

export const managedFieldsCases: ContractCase[] = [
  {
    name: "managedFields is '[]' on a row created without it, and kept whole from create on",
    async fn(h) {
      const s = await h.open();
      const bare = await s.objects.create(Widget, { name: "bare", spec: "{}" });
      assert.equal(bare.managedFields, "[]");
      assert.equal((await s.objects.get(bare.id)).managedFields, "[]");
      const a = await s.objects.create(Widget, { name: "a", spec: "{}", managedFields: ENTRY });
      assert.equal(a.managedFields, ENTRY);
      assert.deepEqual(await s.objects.get(a.id), a);
      assert.equal((await s.objects.list(Widget))[1].managedFields, ENTRY);
    },
  },
  {
    name:
      "updateSpec and updateMetadata write managedFields in the same version; a change alone is one update entry, the same text writes nothing",
    async fn(h) {
      const s = await h.open();
      const created = await s.objects.create(Widget, { name: "a", spec: "{}" });
      const a = ref(Widget, created.id);
      const logged = await logCount(s, Widget);
      const spec = await s.objects.updateSpec(a, { spec: '{"n":1}', managedFields: ENTRY });
      assert.equal(spec.specChanged, true);
      assert.equal(spec.object.managedFields, ENTRY);
      assert.equal(await logCount(s, Widget), logged + 1);
      const same = await s.objects.updateSpec(a, { spec: '{"n":1}', managedFields: ENTRY });
      assert.equal(same.changed, false);
      const only = await s.objects.updateSpec(a, { spec: '{"n":1}', managedFields: OTHER });
      assert.equal(only.changed, true);
      assert.equal(only.specChanged, false);
      assert.equal(only.object.generation, spec.object.generation);
      assert.equal(await logCount(s, Widget), logged + 2);
      const meta = await s.objects.updateMetadata(a, { managedFields: ENTRY });
      assert.equal(meta.changed, true);
      assert.deepEqual(await s.objects.get(a.id), meta.object);
      const kept = await s.objects.updateMetadata(a, { labels: { x: "y" } });
      assert.equal(kept.object.managedFields, ENTRY);
      assert.equal(await logCount(s, Widget), logged + 4);
    },
  },
  {
    name: "a delete entry's row image carries managedFields",
    async fn(h) {
      const s = await h.open();
      const a = await s.objects.create(Widget, { name: "a", spec: "{}", managedFields: ENTRY });
      await s.objects.delete(a.id);
      const { writes } = await s.objectWrites.listSince(Widget, {
        after: a.resourceVersion,
        limit: 10,
      });
      const deleted = writes.find((w) => w.op === "delete");
      assert.equal(deleted?.final?.managedFields, ENTRY);
    },
  },
];
