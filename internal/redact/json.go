package redact

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// JSON masks credentials in every string value of the JSON document data,
// as Text does, and returns the document otherwise unchanged in meaning:
// keys, their order, numbers and the shape are kept, and every string
// decodes to what it was unless it held a credential. It works on values,
// never on the JSON text, whose escapes (\", \\, \u00e9) a URI pattern
// would cut through. The result is compact.
func JSON(data []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	// One frame per open object or array: whether it is an object, and
	// how many keys and values were written in it.
	type frame struct {
		object bool
		n      int
	}
	var (
		out   bytes.Buffer
		stack []frame
	)
	// next writes the separator before the next key or value and
	// reports whether that is an object key.
	next := func() bool {
		if len(stack) == 0 {
			return false
		}
		f := &stack[len(stack)-1]
		key := f.object && f.n%2 == 0
		switch {
		case f.object && !key:
			out.WriteByte(':')
		case f.n > 0:
			out.WriteByte(',')
		}
		f.n++
		return key
	}
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) && len(stack) == 0 && out.Len() > 0 {
			break
		}
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		if err != nil {
			return nil, fmt.Errorf("redact JSON: %w", err)
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{', '[':
				next()
				stack = append(stack, frame{object: v == '{'})
			default:
				stack = stack[:len(stack)-1]
			}
			out.WriteRune(rune(v))
		case string:
			if !next() {
				v = Text(v)
			}
			enc, err := json.Marshal(v)
			if err != nil {
				return nil, fmt.Errorf("redact JSON: %w", err)
			}
			out.Write(enc)
		case json.Number:
			next()
			out.WriteString(v.String())
		case bool:
			next()
			fmt.Fprint(&out, v)
		case nil:
			next()
			out.WriteString("null")
		}
	}
	return out.Bytes(), nil
}
