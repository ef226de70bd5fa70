// Package expire is snapshot management: a pure decision of which
// snapshots and refs expire, and an executor that commits it.
package expire
