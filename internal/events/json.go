package events

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// checkJSON reports whether b is one JSON value. It checks UTF-8 first
// because encoding/json replaces invalid bytes in strings with U+FFFD
// without a word, which would let two different keys decode to one.
func checkJSON(what string, b []byte) error {
	if len(bytes.TrimSpace(b)) == 0 {
		return fmt.Errorf("%s is empty", what)
	}
	if !utf8.Valid(b) {
		return fmt.Errorf("%s is not valid UTF-8", what)
	}
	var v json.RawMessage
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("%s is not JSON: %w", what, err)
	}
	return nil
}

// jsonObject decodes b, which must be a JSON object, keeping its members
// raw so that each is decoded only where it is used.
func jsonObject(what string, b []byte) (map[string]json.RawMessage, error) {
	if err := checkJSON(what, b); err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil || m == nil {
		return nil, fmt.Errorf("%s is not a JSON object", what)
	}
	return m, nil
}

// isNull reports whether raw is absent or JSON null.
func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || string(raw) == "null"
}
