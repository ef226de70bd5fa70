package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/icekeeper/icekeeper/internal/bucket"
)

// cutTableARN splits a table ARN into its bucket's ARN and the table's
// part: NAMESPACE/NAME in the ARNs icekeeper's API prints
// (BUCKET_ARN/table/NAMESPACE/NAME), the table's ID in those S3 Tables
// prints (BUCKET_ARN/table/ID). ok is false for anything else.
func cutTableARN(ref string) (bucketARN, id string, ok bool) {
	if !strings.HasPrefix(ref, "arn:") && !strings.HasPrefix(ref, "acs:") {
		return "", "", false
	}
	bucketARN, id, ok = strings.Cut(ref, "/table/")
	return bucketARN, id, ok && id != "" && strings.Contains(bucketARN, ":bucket/")
}

// tableRef is ref as BUCKET/NAMESPACE/TABLE when it is a table ARN whose
// table part names the namespace and table (unchanged otherwise), and
// whether it is a table ARN that names its table by an ID alone.
func tableRef(ref string) (plain string, byID bool) {
	bucketARN, id, ok := cutTableARN(ref)
	if !ok {
		return ref, false
	}
	if ns, name, ok := strings.Cut(id, "/"); ok {
		return bucketARN + "/" + ns + "/" + name, false
	}
	return ref, true
}

// tableByID finds the table of b that a table ARN names by id: the one
// table whose name is id, else the one whose metadata's table UUID is id
// (S3 Tables' table IDs). It lists every table of the catalog, and loads
// them only when no name matches.
func tableByID(ctx context.Context, b *bucket.Bucket, ref, id string) (bucket.TableID, error) {
	ids, err := b.AllTables(ctx)
	if err != nil {
		return bucket.TableID{}, err
	}
	var named []bucket.TableID
	for _, t := range ids {
		if t.Name == id {
			named = append(named, t)
		}
	}
	switch len(named) {
	case 1:
		return named[0], nil
	case 0:
	default:
		names := make([]string, len(named))
		for i, t := range named {
			names[i] = b.Name() + "/" + t.NamespaceString() + "/" + t.Name
		}
		slices.Sort(names)
		return bucket.TableID{}, usagef("--table %s: %d tables are named %s (%s); give BUCKET/NAMESPACE/TABLE", ref, len(named), id, strings.Join(names, ", "))
	}
	for _, t := range ids {
		tbl, err := b.LoadTable(ctx, t)
		if err != nil {
			return bucket.TableID{}, fmt.Errorf("find the table of %s: %w", ref, err)
		}
		if strings.EqualFold(tbl.Metadata().TableUUID().String(), id) {
			return t, nil
		}
	}
	return bucket.TableID{}, fmt.Errorf("%w %s: none of the %d tables of bucket %s has the name or table UUID %s",
		bucket.ErrNoSuchTable, ref, len(ids), b.Name(), id)
}
