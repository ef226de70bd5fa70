// Package errtext shortens errors for people: the AWS SDK's operation
// errors spell out every layer (retries, request IDs, the full URL) in
// several hundred characters, where the service, the operation, the HTTP
// status and the cause are what a reader needs.
package errtext

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"strings"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
)

var attemptsRE = regexp.MustCompile(`exceeded maximum number of attempts, (\d+)`)

// Short returns err's message on one line, with an AWS SDK operation error
// in it replaced by "SERVICE OPERATION: HTTP STATUS: CODE: message" or, when
// no response came, "SERVICE OPERATION: cause (N attempts)".
func Short(err error) string {
	if err == nil {
		return ""
	}
	msg := strings.Join(strings.Fields(strings.ReplaceAll(err.Error(), "\n", "; ")), " ")
	var op *smithy.OperationError
	if !errors.As(err, &op) {
		return msg
	}
	long := strings.Join(strings.Fields(op.Error()), " ")
	short := fmt.Sprintf("%s %s: %s", op.ServiceID, op.OperationName, cause(op))
	if m := attemptsRE.FindStringSubmatch(long); m != nil {
		short += " (" + m[1] + " attempts)"
	}
	return strings.Replace(msg, long, short, 1)
}

func cause(op *smithy.OperationError) string {
	var status string
	var re *awshttp.ResponseError
	if errors.As(op, &re) && re.HTTPStatusCode() > 0 {
		status = fmt.Sprintf("HTTP %d %s", re.HTTPStatusCode(), http.StatusText(re.HTTPStatusCode()))
		// The SDK's text never says who answered: a 404 from an endpoint
		// that is not the service meant (a wrong port or path prefix)
		// read like a missing object.
		if u := answeredBy(re); u != "" {
			status += " from " + u
		}
	}
	var api smithy.APIError
	if errors.As(op, &api) {
		text := api.ErrorCode()
		if m := api.ErrorMessage(); m != "" {
			text += ": " + m
		}
		if status != "" {
			return status + ": " + text
		}
		return text
	}
	// A network error names the address; below it is only the errno.
	var inner error = op.Err
	var netErr *net.OpError
	if errors.As(op, &netErr) {
		inner = netErr
	} else {
		for u := errors.Unwrap(inner); u != nil; u = errors.Unwrap(inner) {
			inner = u
		}
	}
	if status != "" {
		return status + ": " + inner.Error()
	}
	return inner.Error()
}

// answeredBy is the URL whose answer re is, without its query and user
// info (a presigned request carries its signature there), or "" when the
// SDK kept no request.
func answeredBy(re *awshttp.ResponseError) string {
	if re.Response == nil || re.Response.Response == nil || re.Response.Request == nil || re.Response.Request.URL == nil {
		return ""
	}
	u := *re.Response.Request.URL
	u.RawQuery, u.ForceQuery, u.Fragment, u.User = "", false, "", nil
	return u.String()
}
