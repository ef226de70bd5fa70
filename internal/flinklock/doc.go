// Package flinklock takes and honours the lock that Apache Iceberg's Flink
// table maintenance (org.apache.iceberg.flink.maintenance.api.JdbcLockFactory)
// keeps in a database, so icekeeper and a Flink job never maintain one table
// at the same time.
//
// # The protocol
//
// As read in apache/iceberg (flink/v2.1/flink/src/main/java/org/apache/iceberg/
// flink/maintenance/api/JdbcLockFactory.java, identical in v1.20 and v2.0 and
// unchanged since the 1.11.x branch), a lock is a row of the table
// flink_maintenance_lock:
//
//	LOCK_TYPE   CHAR(1)      'm' maintenance, 'r' recovery
//	LOCK_ID     VARCHAR(100) one per table
//	INSTANCE_ID CHAR(36)     a random UUID, new for every tryLock
//	PRIMARY KEY (LOCK_TYPE, LOCK_ID)
//
// Locking inserts a row, checking selects INSTANCE_ID by type and id, and
// unlocking deletes by type, id and instance. The identifiers are unquoted,
// so PostgreSQL stores them in lower case; both sides write them the same
// way and so name the same columns.
//
// Flink creates the table only when asked, and then with a plain CREATE
// TABLE, without IF NOT EXISTS, after looking the table up through the JDBC
// metadata. It is asked by the property
// flink-maintenance.lock.jdbc.init-lock-tables given to JdbcLockFactory
// (default false); the sink sets that property from the option
// flink-maintenance.lock.jdbc.init-lock-table, singular, default false
// (api/LockConfig.java, operator/LockFactoryBuilder.java), whatever the
// plural one named in docs/docs/flink-maintenance.md says. Open therefore creates the
// table when it is missing, with the same columns and key and IF NOT EXISTS,
// so that whichever of Flink and icekeeper starts first, both find it;
// Flink's look-up then sees it and skips its own.
//
// # Which lock id a Flink job uses
//
// When maintenance runs inside the sink (IcebergSink.addPostCommitTopology),
// the lock id is flink-maintenance.lock.lock-id when set, otherwise the Iceberg
// table's name, Table.name(): "catalog.namespace.table" for catalogs built on
// BaseMetastoreCatalog or REST (CatalogUtil.fullTableName,
// RESTSessionCatalog.fullTableName). These options come from the sink's write
// options and the Flink configuration, never from table properties, so the id
// cannot be read off the table: it must be configured on both sides. Without
// flink-maintenance.lock.type=jdbc the sink keeps its lock inside the job
// (BaseCoordinator) and writes no row at all. A job built with
// TableMaintenance.forTable passes its own id to JdbcLockFactory. Flink itself
// refuses ids of 100 or more UTF-16 units.
//
// # What Flink does with a lock it did not take
//
// Flink's unlock is not bound to its own instance: it reads the holder and
// deletes that holder's row. It unlocks both types when its trigger operator
// starts without restored state (TriggerManager.initializeState) and when a
// task ends (LockRemover), so a Flink job may delete a row icekeeper holds.
// Callers therefore check with Holder that they still hold the lock before
// any step that must not overlap Flink's. Flink's tryLock checks before it
// inserts; if icekeeper inserts in between, Flink's INSERT fails and so does
// its operator, which Flink restarts through its recovery. While restoring,
// Flink holds the recovery lock and starts no task until that row is gone.
package flinklock
