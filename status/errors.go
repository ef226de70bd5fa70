package status

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/icekeeper/icekeeper/internal/bucket"
	"github.com/icekeeper/icekeeper/maintenance"
	"github.com/icekeeper/icekeeper/orphan"
)

// apiError is an error with S3 Tables' error type and HTTP status.
type apiError struct {
	status int
	kind   string // the X-Amzn-ErrorType value
	msg    string
	// retryAfter, when set, is the Retry-After header's seconds.
	retryAfter int
}

func (e *apiError) Error() string { return e.kind + ": " + e.msg }

func badRequest(msg string) *apiError {
	return &apiError{status: http.StatusBadRequest, kind: "BadRequestException", msg: msg}
}
func notFound(msg string) *apiError {
	return &apiError{status: http.StatusNotFound, kind: "NotFoundException", msg: msg}
}
func forbidden(msg string) *apiError {
	return &apiError{status: http.StatusForbidden, kind: "ForbiddenException", msg: msg}
}

// classify maps an error from the layers below to the API's error types:
// unknown buckets and tables are NotFoundException, invalid input is
// BadRequestException, anything else is an internal error whose details
// go to the log, not to the caller.
func classify(err error) *apiError {
	var ae *apiError
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.Is(err, bucket.ErrUnknownBucket), errors.Is(err, bucket.ErrNoSuchTable), errors.Is(err, orphan.ErrNotMarked):
		return notFound(err.Error())
	case errors.Is(err, maintenance.ErrInvalid), errors.Is(err, bucket.ErrBadRef):
		return badRequest(err.Error())
	}
	return &apiError{status: http.StatusInternalServerError, kind: "InternalServerErrorException", msg: "internal error"}
}

func tooManyRequests(msg string, retryAfter int) *apiError {
	return &apiError{status: http.StatusTooManyRequests, kind: "TooManyRequestsException", msg: msg, retryAfter: retryAfter}
}

func writeError(w http.ResponseWriter, e *apiError) {
	if e.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(e.retryAfter))
	}
	w.Header().Set("X-Amzn-ErrorType", e.kind)
	writeJSON(w, e.status, map[string]string{"message": e.msg})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
