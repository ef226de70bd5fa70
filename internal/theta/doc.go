// Package theta is the part of Apache DataSketches' theta sketch that
// Iceberg's table statistics need, written so that its bytes are the ones
// the Java library writes for the same updates: MurmurHash3_x64_128 with
// the library's default seed (9001), the QuickSelect update sketch at the
// library's default size (lgK 12: 4,096 nominal entries) with its rebuild
// rule, the union, and the compact ordered sketch in serial version 3 —
// the payload of a Puffin `apache-datasketches-theta-v1` blob.
//
// Only the compact form leaves a process. Its bytes depend on the set of
// distinct hashes seen and on theta, and theta depends only on when the
// update sketch rebuilt (when its distinct count passed the rebuild
// threshold), not on how its hash table probes: so the table here is a
// plain open-addressing set, and the counts at which it rebuilds are the
// library's.
//
// The tests hold the bytes to the files the Java library wrote for its
// cross-language tests (by SHA-256) and to vectors assembled by hand from
// the format's description.
//
// Values are hashed in Iceberg's single-value serialization (the bytes
// `Conversions.toByteBuffer` gives in Java); see the Value functions.
// The package is pure: no I/O, no package-level mutable state.
package theta
