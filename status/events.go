package status

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/icekeeper/icekeeper/internal/events"
	"github.com/icekeeper/icekeeper/internal/state"
)

// EventSink is what the event route hands events to: the scheduler,
// which maps them to tables and checks those, debounced.
type EventSink interface {
	Route(evs []events.Event) (tables []state.TableKey, ignored int)
	Notify(keys []state.TableKey)
}

// EventsPath is the event route: S3 event notifications (AWS's JSON, as
// MinIO, SeaweedFS, RustFS and Ceph webhooks send it) and CloudEvents
// (structured, batched or binary).
const EventsPath = "/icekeeper/v1/events"

// maxEventBody bounds an event request's body: AWS batches at most a few
// records per notification, webhooks one.
const maxEventBody = 1 << 20

// events serves POST EventsPath. A webhook authenticates with a bearer
// token of events.tokens (it cannot sign); a client with the API's keys
// signs as for any call. Events never run anything themselves: each table
// they name gets a check, which queues a run through the engine, under
// its leases, budgets and locks.
func (s *Server) events() http.Handler {
	signed := s.api(s.postEvents)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			// Before credentials: what a route takes is no secret, and a
			// sender probing with GET learns it at once.
			w.Header().Set("Allow", http.MethodPost)
			writeError(w, &apiError{status: http.StatusMethodNotAllowed, kind: "MethodNotAllowedException",
				msg: fmt.Sprintf("%s takes POST only (events as the body), not %s", EventsPath, r.Method)})
			return
		}
		auth := strings.TrimSpace(r.Header.Get("Authorization"))
		scheme, tok, _ := strings.Cut(auth, " ")
		if strings.EqualFold(scheme, "Bearer") {
			tok = strings.TrimSpace(tok)
			if tok == "" {
				s.unauthorized(w, "the bearer token is empty")
				return
			}
			if !s.eventToken(tok) {
				s.unauthorized(w, "the bearer token is not one of events.tokens")
				return
			}
			// A token stands for the whole daemon, as a webhook target
			// does; nothing in an event can act beyond a check.
			if err := s.postEvents(w, r); err != nil {
				writeError(w, classify(err))
			}
			return
		}
		if auth == "" && (s.Auth != nil || len(s.EventTokens) > 0) {
			s.unauthorized(w, "the request has no Authorization header")
			return
		}
		if s.Auth == nil && len(s.EventTokens) > 0 {
			s.unauthorized(w, "the Authorization header is not a bearer token")
			return
		}
		signed.ServeHTTP(w, r)
	})
}

// unauthorized refuses an event request for why, naming every way the
// route accepts: a webhook's operator reads this, and may not know that
// the route takes a bearer token at all.
func (s *Server) unauthorized(w http.ResponseWriter, why string) {
	var ways []string
	if len(s.EventTokens) > 0 {
		ways = append(ways, "Authorization: Bearer with a token of events.tokens (what a webhook sends)")
	}
	if s.Auth != nil {
		ways = append(ways, fmt.Sprintf("a SigV4 signature (service %s) by a key of api.keys", s.Auth.SigningName))
	}
	msg := why + "; POST " + EventsPath + " accepts " + strings.Join(ways, ", or ")
	if len(s.EventTokens) == 0 {
		msg += "; a webhook that cannot sign needs events.tokens set"
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="icekeeper events"`)
	writeError(w, &apiError{status: http.StatusUnauthorized, kind: "UnauthorizedException", msg: msg})
}

// eventToken reports whether tok is one of the configured tokens, in
// time that does not depend on where they differ.
func (s *Server) eventToken(tok string) bool {
	ok := 0
	for _, t := range s.EventTokens {
		ok |= subtle.ConstantTimeCompare([]byte(tok), []byte(t))
	}
	return ok == 1 && tok != ""
}

// postEvents decodes the events, maps them to tables the caller may see,
// and queues a check of each: 202 with the tables and how many events
// matched none.
func (s *Server) postEvents(w http.ResponseWriter, r *http.Request) error {
	if s.Events == nil {
		return notFound("events are not configured: set events in the configuration (and a freshness target) to use " + EventsPath)
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxEventBody))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return &apiError{status: http.StatusRequestEntityTooLarge, kind: "BadRequestException",
				msg: fmt.Sprintf("event body is over %d bytes", maxEventBody)}
		}
		return badRequest("read the event body: " + err.Error())
	}
	all, err := events.ParseAll(r.Header, body)
	if err != nil {
		return badRequest(err.Error())
	}
	var evs []events.Event
	reasons := []string{}
	for _, ev := range all {
		if ev.Ignored != "" {
			reasons = append(reasons, ev.Ignored)
			continue
		}
		evs = append(evs, ev)
	}
	tables, unmatched := s.Events.Route(evs)
	var checked []state.TableKey
	for _, k := range tables {
		b, err := s.Registry.Bucket(k.Bucket)
		if err != nil || s.authorize(r, b.Name(), k.Namespace) != nil {
			unmatched++ // beyond the key's scopes: as if no table matched
			continue
		}
		checked = append(checked, k)
	}
	if unmatched > 0 {
		// One reason for all: which of them a table beyond the caller's
		// scopes matched is not the caller's to learn.
		reasons = append(reasons, fmt.Sprintf("%d named no table to check: none that icekeeper maintains and the caller may see, "+
			"or a removal or drop, which leaves nothing to maintain", unmatched))
	}
	s.Events.Notify(checked)
	names := make([]string, len(checked))
	for i, k := range checked {
		names[i] = k.String()
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"events": len(all), "checks": names,
		"ignored": len(all) - len(evs) + unmatched, "reasons": reasons})
	return nil
}
