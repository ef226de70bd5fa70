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
		if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
			if !s.eventToken(tok) {
				writeError(w, &apiError{status: http.StatusUnauthorized, kind: "UnauthorizedException",
					msg: "the bearer token is not one of events.tokens"})
				return
			}
			// A token stands for the whole daemon, as a webhook target
			// does; nothing in an event can act beyond a check.
			if err := s.postEvents(w, r); err != nil {
				writeError(w, classify(err))
			}
			return
		}
		if s.Auth == nil && len(s.EventTokens) > 0 {
			writeError(w, &apiError{status: http.StatusUnauthorized, kind: "UnauthorizedException",
				msg: "POST " + EventsPath + " needs Authorization: Bearer with a token of events.tokens"})
			return
		}
		signed.ServeHTTP(w, r)
	})
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
	evs, err := events.Parse(r.Header, body)
	if err != nil {
		return badRequest(err.Error())
	}
	tables, ignored := s.Events.Route(evs)
	var checked []state.TableKey
	for _, k := range tables {
		b, err := s.Registry.Bucket(k.Bucket)
		if err != nil || s.authorize(r, b.Name(), k.Namespace) != nil {
			ignored++ // beyond the key's scopes: as if no table matched
			continue
		}
		checked = append(checked, k)
	}
	s.Events.Notify(checked)
	names := make([]string, len(checked))
	for i, k := range checked {
		names[i] = k.String()
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"events": len(evs), "checks": names, "ignored": ignored})
	return nil
}
