// Package tables is the registry of the tables icekeeper can see: what a
// table is, and what each bucket's names hold.
//
// A table is its Iceberg UUID (the metadata's table-uuid), not its name.
// A table dropped and created again under the same name (a dbt full
// refresh, DROP TABLE + CREATE TABLE) is a new table with a new UUID; a
// renamed table keeps its UUID under a new name; a table registered at
// another table's metadata file (register_table) shares that table's UUID
// under its own name. Everything icekeeper remembers of a table (runs,
// settings put through the API, noncurrent marks, health history, the
// reference and key indexes, erasure's blocks) is stored under the name
// the table holds now, and the registry keeps that true as names change
// hands:
//
//   - a name found holding another UUID than the one recorded: the
//     recorded table was dropped; its state moves out of the name, to the
//     dropped table's own key (state.TableKey.Dropped), where it stays
//     readable and nothing acts on it, and the name starts afresh;
//   - a UUID found under a new name while the catalog no longer has its
//     old one: a rename; its state moves to the new name;
//   - a UUID found under a new name while its old name still holds it: a
//     fork (register_table); two tables, the new name starts afresh;
//   - a dropped UUID found again: the table is back (an undrop, or a
//     register_table at its metadata); its state moves back.
//
// Every run, every poll of the daemon and every listing of a bucket
// observes the tables it reads, so the registry follows the catalog
// without reading more of it. Deciding what an observation means is pure
// (Decide); Registry does the reads and writes around it.
package tables
