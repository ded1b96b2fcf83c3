/**
 * The controllers under test in `database_test.ts`: a `Database` that claims
 * its cleanup with a finalizer, owns a `Volume` (deleting the database
 * cascades to it), and is backed up every hour.
 *
 * @module
 */
import { type Beehive, settled } from "@beehive/beehive";

export const Database = { group: "example.com", kind: "Database" };
export const Volume = { group: "example.com", kind: "Volume" };
export const FINALIZER = "example.com/release-volume";
export const HOUR = 3_600_000;

export interface DatabaseSpec {
  readonly sizeGb: number;
}
export interface DatabaseStatus {
  readonly backups: number;
  readonly lastBackupAt: string;
}

/** The outside world the controllers act on: here, a list of what they did. */
export interface Cloud {
  backup(database: string): void;
  release(database: string): void;
}

/** Registers both controllers on `bh`. */
export function registerDatabase(bh: Beehive, cloud: Cloud): void {
  const volumes = bh.client<{ sizeGb: number }>(Volume);

  bh.register<DatabaseSpec, DatabaseStatus>(Database, async (db, cc) => {
    if (db.deletionRequestedAt !== undefined) {
      // Passes go on until the owned volume is collected: release once.
      if (db.finalizers.includes(FINALIZER)) {
        cloud.release(db.name);
        await cc.deleteFinalizer(FINALIZER);
      }
      return settled();
    }
    await cc.addFinalizer(FINALIZER);
    if ((await cc.listOwned()).length === 0) {
      await volumes.create(`${db.name}-data`, { sizeGb: db.spec.sizeGb }, { owner: db.id });
    }
    const last = db.status === undefined ? -Infinity : Date.parse(db.status.lastBackupAt);
    if (Date.now() - last >= HOUR) {
      cloud.backup(db.name);
      await cc.updateStatus({
        backups: (db.status?.backups ?? 0) + 1,
        lastBackupAt: new Date().toISOString(),
      });
    }
    return settled().requeueAfter(HOUR);
  });

  bh.register(Volume, () => settled());
}
