package status

import (
	"net/http"

	"github.com/icekeeper/icekeeper/configs"
)

// riverRoutes mounts River's web UI (riverqueue.com/riverui) under
// /river/, where the daemon has one: on a PostgreSQL state store. It shows
// and acts on the jobs of every table, so with keys configured it takes a
// key without scopes, signed in with HTTP Basic as the dashboard is; a
// read-only key may look but not retry, cancel or delete.
func (s *Server) riverRoutes(mux *http.ServeMux) {
	mux.HandleFunc("/river/", func(w http.ResponseWriter, r *http.Request) {
		if s.RiverUI == nil {
			writeError(w, notFound("River's UI is served only where the state store is PostgreSQL"))
			return
		}
		if s.Auth != nil {
			key, ok := s.browserKey(w, r)
			if !ok {
				return
			}
			if len(key.Scopes) > 0 {
				writeError(w, forbidden("River's UI shows the jobs of every table: access key "+key.AccessKeyID+" is scoped"))
				return
			}
			if key.ReadOnly && r.Method != http.MethodGet && r.Method != http.MethodHead {
				writeError(w, forbidden("access key "+key.AccessKeyID+" is read-only"))
				return
			}
		}
		s.RiverUI.ServeHTTP(w, r)
	})
}

// browserKey authenticates a browser's request with HTTP Basic (access key
// ID and secret), asking for credentials when they are missing or wrong;
// wrong ones count towards the address's back-off, as a bad signature does.
func (s *Server) browserKey(w http.ResponseWriter, r *http.Request) (configs.APIKey, bool) {
	if err := s.Auth.backingOff(r); err != nil {
		writeError(w, classify(err))
		return configs.APIKey{}, false
	}
	id, secret, ok := r.BasicAuth()
	key, err := s.Auth.basic(id, secret)
	if !ok || err != nil {
		if ok {
			s.Auth.fail(r, id, "wrong HTTP Basic credentials")
		}
		w.Header().Set("WWW-Authenticate", `Basic realm="icekeeper"`)
		http.Error(w, "sign in with an API access key ID and secret", http.StatusUnauthorized)
		return configs.APIKey{}, false
	}
	return key, true
}
