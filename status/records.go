package status

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
)

// The record expiration calls of S3 Tables. They name the table by its
// ARN in the query, not by path as the maintenance calls do.
func (s *Server) recordRoutes(api func(string, handlerFunc)) {
	api("GET /table-record-expiration", s.getRecordExpiration)
	api("PUT /table-record-expiration", s.putRecordExpiration)
	api("GET /table-record-expiration-job-status", s.getRecordExpirationStatus)
}

// tableByARN resolves the table of the tableArn query parameter.
func (s *Server) tableByARN(r *http.Request) (jobs.Target, error) {
	a := r.URL.Query().Get("tableArn")
	if a == "" {
		return jobs.Target{}, badRequest("tableArn is required")
	}
	bucketARN, ns, name, ok := splitTableARN(a)
	if !ok {
		return jobs.Target{}, badRequest(fmt.Sprintf("invalid table ARN %q (want TABLE_BUCKET_ARN/table/NAMESPACE/NAME)", a))
	}
	return s.targetOf(r, bucketARN, ns, name)
}

// getRecordExpiration is GetTableRecordExpirationConfiguration: the
// table's resolved configuration (disabled until enabled).
func (s *Server) getRecordExpiration(w http.ResponseWriter, r *http.Request) error {
	t, err := s.tableByARN(r)
	if err != nil {
		return err
	}
	settings, err := s.resolver().Table(r.Context(), t)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"configuration": settings.For(maintenance.RecordExpiration)})
	return nil
}

// putRecordExpiration is PutTableRecordExpirationConfiguration. Enabling
// it on a table the job cannot run on (no days, no expiration column) is
// refused with why, and nothing is stored.
func (s *Server) putRecordExpiration(w http.ResponseWriter, r *http.Request) error {
	typ := maintenance.RecordExpiration
	cfg, err := decodeValue(r, typ)
	if err != nil {
		return err
	}
	t, err := s.tableByARN(r)
	if err != nil {
		return err
	}
	return s.storeTableConfig(w, r, t, typ, cfg)
}

// expirationMetrics are the S3 Tables metrics of a run, read from the
// run's recorded figures.
type expirationMetrics struct {
	DeletedDataFiles *int64 `json:"deletedDataFiles,omitempty"`
	DeletedRecords   *int64 `json:"deletedRecords,omitempty"`
	RemovedFilesSize *int64 `json:"removedFilesSize,omitempty"`
}

// getRecordExpirationStatus is GetTableRecordExpirationJobStatus. S3
// Tables spells these statuses without the underscore of the maintenance
// job statuses: NotYetRun, Successful, Failed, Disabled.
func (s *Server) getRecordExpirationStatus(w http.ResponseWriter, r *http.Request) error {
	t, err := s.tableByARN(r)
	if err != nil {
		return err
	}
	typ := maintenance.RecordExpiration
	settings, err := s.resolver().Table(r.Context(), t)
	if err != nil {
		return err
	}
	last, err := s.Store.LastRuns(r.Context(), t.Key())
	if err != nil {
		return err
	}
	run, ran := last[typ]
	out := struct {
		wireStatus
		Metrics *expirationMetrics `json:"metrics,omitempty"`
	}{wireStatus: s.status(settings.For(typ), run, ran, recordsDialect)}
	if out.Status == string(state.Successful) {
		var m expirationMetrics
		if json.Unmarshal(run.Metrics, &m) == nil && m.DeletedRecords != nil {
			out.Metrics = &m
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
