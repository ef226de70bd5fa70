package status

import (
	"net/http"
	"strconv"
	"time"

	"github.com/icekeeper/icekeeper/internal/bucket"
	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/maintenance"
)

// droppedKeep is how far back GET …/dropped-tables looks by default: a
// dropped table's state is kept, but a person asks about last month's.
const droppedKeep = 30 * 24 * time.Hour

// droppedJSON is a dropped table as GET …/dropped-tables serves it.
type droppedJSON struct {
	// Bucket is the bucket's name, in the overview (the route names it
	// once).
	Bucket           string    `json:"bucket,omitempty"`
	Namespace        string    `json:"namespace"`
	Name             string    `json:"name"`
	TableUUID        string    `json:"tableUUID"`
	Locations        []string  `json:"locations,omitempty"`
	MetadataLocation string    `json:"metadataLocation,omitempty"`
	FirstSeen        time.Time `json:"firstSeen"`
	DroppedAt        time.Time `json:"droppedAt"`
	// CollectedAt is when removal found nothing left of it.
	CollectedAt *time.Time `json:"collectedAt,omitempty"`
	// Runs are its last runs by type, as they stood at the drop.
	Runs map[maintenance.JobType]runJSON `json:"runs"`
	// Configuration is what was put through the API for it.
	Configuration map[maintenance.JobType]maintenance.Config `json:"configuration,omitempty"`
	// Noncurrent counts the noncurrent marks its leftovers have, and
	// NoncurrentBytes their size.
	Noncurrent      int   `json:"noncurrent"`
	NoncurrentBytes int64 `json:"noncurrentBytes"`
}

// getDropped serves GET /icekeeper/v1/buckets/{arn}/dropped-tables?days=N:
// the bucket's tables dropped in the last N days (default 30), newest
// first, each with what icekeeper kept of it. A dropped table's runs,
// settings and marks never act on a table created under its name since;
// here they stay readable as its own.
func (s *Server) getDropped(w http.ResponseWriter, r *http.Request) error {
	b, err := s.bucketOf(r)
	if err != nil {
		return err
	}
	since := time.Now().Add(-droppedKeep)
	if v := r.URL.Query().Get("days"); v != "" {
		days, err := strconv.Atoi(v)
		if err != nil || days < 1 || days > 3650 {
			return badRequest("days must be a whole number from 1 to 3650")
		}
		since = time.Now().Add(-time.Duration(days) * 24 * time.Hour)
	}
	out, err := s.dropped(r, b, since)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"tableBucketARN": b.ARN(), "tables": out})
	return nil
}

// dropped are the tables dropped from b since since that the caller may
// see, newest first.
func (s *Server) dropped(r *http.Request, b *bucket.Bucket, since time.Time) ([]droppedJSON, error) {
	recs, err := s.Store.DroppedTables(r.Context(), b.ARN(), since)
	if err != nil {
		return nil, err
	}
	out := []droppedJSON{}
	for _, rec := range recs {
		if s.authorize(r, b.Name(), rec.Key.Namespace) != nil {
			continue
		}
		k := rec.StateKey()
		last, err := s.Store.LastRuns(r.Context(), k)
		if err != nil {
			return nil, err
		}
		marks, err := s.Store.Marks(r.Context(), k)
		if err != nil {
			return nil, err
		}
		cfg, err := s.Store.TableConfig(r.Context(), k)
		if err != nil {
			return nil, err
		}
		d := droppedJSON{Namespace: rec.Key.Namespace, Name: rec.Key.Name, TableUUID: rec.UUID, Locations: rec.Locations,
			MetadataLocation: rec.MetadataLocation, FirstSeen: rec.FirstSeen, DroppedAt: rec.Dropped,
			Runs: map[maintenance.JobType]runJSON{}, Configuration: cfg, Noncurrent: len(marks)}
		for _, m := range marks {
			d.NoncurrentBytes += m.Size
		}
		if !rec.Collected.IsZero() {
			d.CollectedAt = &rec.Collected
		}
		for typ, run := range last {
			run.Table = rec.Key // as the table was named, not its key in the store
			d.Runs[typ] = s.withSummaries(typ, []state.Run{run})[0]
		}
		out = append(out, d)
	}
	return out, nil
}
