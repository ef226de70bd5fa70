package status

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/icekeeper/icekeeper/internal/arn"
	"github.com/icekeeper/icekeeper/internal/bucket"
	"github.com/icekeeper/icekeeper/jobs"
	"github.com/icekeeper/icekeeper/maintenance"
)

// maxBody bounds request bodies: a maintenance configuration is a few
// hundred bytes.
const maxBody = 64 << 10

// target resolves the bucket and table of a request, checking the table
// exists and the caller may see it.
func (s *Server) target(r *http.Request) (jobs.Target, error) {
	return s.targetOf(r, r.PathValue("arn"), r.PathValue("namespace"), r.PathValue("name"))
}

// targetOf is target for a bucket ARN, namespace and name however the
// request carries them.
func (s *Server) targetOf(r *http.Request, bucketARN, ns, name string) (jobs.Target, error) {
	b, err := s.bucketByARN(bucketARN)
	if err != nil {
		return jobs.Target{}, err
	}
	if ns == "" || name == "" || strings.Contains(ns, "..") {
		return jobs.Target{}, badRequest("namespace and name are required")
	}
	if err := s.authorize(r, b.Name(), ns); err != nil {
		return jobs.Target{}, err
	}
	t := jobs.Target{Bucket: b, Table: bucket.TableIDOf(ns, name)}
	if err := s.Tables.Exists(r.Context(), t); err != nil {
		return jobs.Target{}, err
	}
	return t, nil
}

func (s *Server) bucketOf(r *http.Request) (*bucket.Bucket, error) {
	return s.bucketByARN(r.PathValue("arn"))
}

// bucketByARN finds a bucket by its full ARN: a string that is not a table
// bucket ARN is a bad request, as AWS answers it; a well-formed ARN of no
// configured bucket is not found.
func (s *Server) bucketByARN(a string) (*bucket.Bucket, error) {
	// Only the full ARN names a bucket on the wire. A configured bucket's
	// ARN was parsed when the configuration was read, so a request naming
	// one is answered without parsing it again (a third of the job-status
	// call's own work, on one core).
	if b, err := s.Registry.Bucket(a); err == nil && b.ARN() == a {
		return b, nil
	}
	if _, err := arn.Parse(a); err != nil {
		return nil, badRequest(err.Error())
	}
	return nil, notFound(fmt.Sprintf("table bucket %q does not exist", a))
}

func tableARN(t jobs.Target) string {
	return t.Bucket.ParsedARN().TableARN(t.Table.NamespaceString(), t.Table.Name)
}

// getJobStatus is GetTableMaintenanceJobStatus.
func (s *Server) getJobStatus(w http.ResponseWriter, r *http.Request) error {
	t, err := s.target(r)
	if err != nil {
		return err
	}
	last, err := s.Store.LastRuns(r.Context(), t.Key())
	if err != nil {
		return err
	}
	types := maintenance.MaintenanceTypes()
	statuses, err := s.resolver().Statuses(r.Context(), t, types)
	if err != nil {
		return err
	}
	out := jobStatusResponse{TableARN: tableARN(t), Status: make(map[maintenance.JobType]wireStatus, len(types))}
	now := time.Now()
	for i, typ := range types {
		run, ran := last[typ]
		ws := s.status(maintenance.Config{Status: statuses[i]}, run, ran, maintenanceDialect)
		ws.Freshness = s.freshness(t.Key(), typ, now)
		out.Status[typ] = ws
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(append(out.appendJSON(make([]byte, 0, 2048)), '\n'))
	return nil
}

// jobStatusResponse is GetTableMaintenanceJobStatus's answer, written by
// appendJSON.
type jobStatusResponse struct {
	TableARN string                             `json:"tableARN"`
	Status   map[maintenance.JobType]wireStatus `json:"status"`
}

// getTableConfig is GetTableMaintenanceConfiguration: the resolved
// configuration of the table's job types.
func (s *Server) getTableConfig(w http.ResponseWriter, r *http.Request) error {
	t, err := s.target(r)
	if err != nil {
		return err
	}
	settings, err := s.resolver().Table(r.Context(), t)
	if err != nil {
		return err
	}
	out := map[maintenance.JobType]maintenance.Config{}
	for _, typ := range maintenance.Types() {
		if typ.Dialect == maintenance.MaintenanceDialect && typ.Scope == maintenance.TableScope && answers(r, typ) {
			out[typ.Name] = settings.For(typ.Name)
		}
	}
	// "icekeeper" is beyond S3 Tables (the SDKs ignore it): the bucket's
	// knobs from the configuration file, the rest of what steers a run.
	writeJSON(w, http.StatusOK, map[string]any{"tableARN": tableARN(t), "configuration": out, "icekeeper": settings.Knobs})
	return nil
}

// putTableConfig is PutTableMaintenanceConfiguration.
func (s *Server) putTableConfig(w http.ResponseWriter, r *http.Request) error {
	typ, err := maintenanceType(r.PathValue("type"))
	if err != nil {
		return err
	}
	if typ.Scope == maintenance.BucketScope {
		return badRequest(fmt.Sprintf("%s is configured per table bucket: PUT /buckets/{tableBucketARN}/maintenance/%s", typ.Name, typ.Name))
	}
	cfg, err := decodeValue(r, typ.Name)
	if err != nil {
		return err
	}
	t, err := s.target(r)
	if err != nil {
		return err
	}
	return s.storeTableConfig(w, r, t, typ.Name, cfg)
}

// storeTableConfig stores cfg as t's configuration of typ once typ's job
// has checked it can run with it, and answers 204.
func (s *Server) storeTableConfig(w http.ResponseWriter, r *http.Request, t jobs.Target, typ maintenance.JobType, cfg maintenance.Config) error {
	if err := s.Runner.CheckTableConfig(r.Context(), t, typ, cfg); err != nil {
		return err
	}
	if err := s.Store.PutTableConfig(r.Context(), t.Key(), typ, cfg); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// IncludeOwnQuery is the query parameter (with the value "icekeeper")
// that asks the configuration calls for icekeeper's own job types too.
const IncludeOwnQuery = "include"

// answers says whether a configuration call answers typ. An AWS SDK
// decodes the settings union strictly: a member it does not know becomes
// "SDK_UNKNOWN_MEMBER" in the AWS CLI's output, or an unknown-member value
// a program cannot read. So icekeeper's own types are left out unless the
// request asks for them with a query parameter no SDK sends for these
// calls (icekeeper settings does).
func answers(r *http.Request, typ maintenance.Type) bool {
	return !typ.Own || r.URL.Query().Get(IncludeOwnQuery) == "icekeeper"
}

// getBucketConfig is GetTableBucketMaintenanceConfiguration.
func (s *Server) getBucketConfig(w http.ResponseWriter, r *http.Request) error {
	b, err := s.bucketOf(r)
	if err != nil {
		return err
	}
	// Bucket-wide settings: a key scoped to namespaces may not read them.
	if err := s.authorize(r, b.Name(), ""); err != nil {
		return err
	}
	out := map[maintenance.JobType]maintenance.Config{}
	for _, typ := range maintenance.Types() {
		if typ.Scope != maintenance.BucketScope || !answers(r, typ) {
			continue
		}
		if out[typ.Name], err = s.resolver().Bucket(r.Context(), b.ARN(), typ.Name); err != nil {
			return err
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"tableBucketARN": b.ARN(), "configuration": out})
	return nil
}

// putBucketConfig is PutTableBucketMaintenanceConfiguration.
func (s *Server) putBucketConfig(w http.ResponseWriter, r *http.Request) error {
	typ, err := maintenanceType(r.PathValue("type"))
	if err != nil {
		return err
	}
	if typ.Scope != maintenance.BucketScope {
		return badRequest(fmt.Sprintf("%s is configured per table: PUT /tables/{tableBucketARN}/{namespace}/{name}/maintenance/%s", typ.Name, typ.Name))
	}
	cfg, err := decodeValue(r, typ.Name)
	if err != nil {
		return err
	}
	b, err := s.bucketOf(r)
	if err != nil {
		return err
	}
	if err := s.authorize(r, b.Name(), ""); err != nil {
		return err
	}
	if err := s.Store.PutBucketConfig(r.Context(), b.ARN(), typ.Name, cfg); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// decodeValue reads {"value": {...}} strictly.
func decodeValue(r *http.Request, typ maintenance.JobType) (maintenance.Config, error) {
	data, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, maxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return maintenance.Config{}, badRequest(fmt.Sprintf("request body is larger than %d bytes", maxBody))
		}
		return maintenance.Config{}, badRequest("cannot read request body")
	}
	var envelope map[string]json.RawMessage
	if err := json.Unmarshal(data, &envelope); err != nil {
		return maintenance.Config{}, badRequest("request body is not a JSON object: " + err.Error())
	}
	value, ok := envelope["value"]
	if !ok || len(envelope) != 1 {
		return maintenance.Config{}, badRequest(`request body must be {"value": {"status": …, "settings": …}}`)
	}
	cfg, err := maintenance.DecodeConfig(typ, value)
	if err != nil {
		return maintenance.Config{}, badRequest(strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	return cfg, nil
}

// maintenanceType reads the job type of a maintenance configuration call:
// one of S3 Tables' maintenance types, not record expiration, which has
// calls of its own.
func maintenanceType(name string) (maintenance.Type, error) {
	t, err := maintenance.ParseJobType(name)
	if err != nil {
		return maintenance.Type{}, badRequest(err.Error())
	}
	typ, _ := maintenance.Lookup(t)
	if typ.Dialect != maintenance.MaintenanceDialect {
		return maintenance.Type{}, badRequest(fmt.Sprintf("%s is not a maintenance job type: it is configured with PUT /table-record-expiration", t))
	}
	return typ, nil
}
