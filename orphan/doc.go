// Package orphan is unreferenced file removal: it marks objects no
// metadata references as noncurrent and deletes them nonCurrentDays later.
// Not implemented yet.
package orphan
