package s3write

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/icekeeper/icekeeper/internal/objects"
)

// Server-side copies. A writer appends a byte range of another object of
// its bucket as parts of its multipart upload copied by the store
// (UploadPartCopy with a source range): the bytes never pass through
// icekeeper, neither read nor uploaded. S3 takes parts of at least 5 MiB
// but the last, so a copy is made only of ranges that reach that, and the
// bytes written before it that do not make a part of their own are
// completed by the first bytes of the range, read and uploaded.

// MinPartBytes is S3's smallest part but the last.
const MinPartBytes = 5 << 20

// maxCopyPartBytes bounds one part copy below S3's 5 GiB.
const maxCopyPartBytes = 4 << 30

// foldBytes is the most buffered bytes a copy checks against the bytes
// before its range, to copy them with it (a Parquet file's magic, written
// before its first row group, is the first 4 bytes of every input too).
const foldBytes = 64

// Copies is what one run knows of its stores' part copies: the buckets
// whose store refused UploadPartCopy, which are not asked again, and
// those where a copy went through, whose next copies need not wait. The
// zero value is ready; it is safe for concurrent use.
type Copies struct {
	// Off makes every copy read and upload the bytes instead (the path
	// before part copies, kept for stores where they cost more and for
	// side-by-side measurement).
	Off bool
	// Log is where a refusal is logged, once per bucket (nil: slog's
	// default).
	Log *slog.Logger

	mu        sync.Mutex
	refused   map[string]bool
	supported map[string]bool
}

// Refused reports whether the store of bucket refused part copies in
// this run.
func (c *Copies) Refused(bucket string) bool {
	refused, _ := c.state(bucket)
	return refused
}

// state is what c knows of bucket: refused, supported, or neither yet.
func (c *Copies) state(bucket string) (refused, supported bool) {
	if c == nil {
		return false, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.refused[bucket], c.supported[bucket]
}

func (c *Copies) set(bucket string, ok bool, err error) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.refused == nil {
		c.refused, c.supported = map[string]bool{}, map[string]bool{}
	}
	if ok {
		c.supported[bucket] = true
		return
	}
	if c.refused[bucket] {
		return
	}
	c.refused[bucket] = true
	log := c.Log
	if log == nil {
		log = slog.Default()
	}
	log.Info("the store refuses server-side part copies; copied row groups are read and uploaded instead", "bucket", bucket, "error", err)
}

// refusal reports whether err is the store saying it does not do part
// copies at all, rather than a copy that failed: not implemented, or a
// method or request it does not take.
func refusal(err error) bool {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "NotImplemented", "XNotImplemented", "MethodNotAllowed", "InvalidRequest", "InvalidArgument":
			return true
		}
	}
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		switch re.HTTPStatusCode() {
		case http.StatusNotImplemented, http.StatusMethodNotAllowed:
			return true
		}
	}
	return false
}

// CopyRange appends n bytes of the object at path, from off, copied by
// the store; r reads the same bytes, for those that must pass through
// (the start of the range that completes the part being written). It
// reports false, having appended nothing, where no copy is made: copies
// off, the object in another bucket, a range too short for a part of its
// own, or a store that refuses part copies; the caller then writes the
// bytes itself.
//
// copies is what the run knows of its stores' part copies (nil: nothing;
// every copy then asks the store first).
func (w *writer) CopyRange(copies *Copies, r io.ReaderAt, path string, off, n int64) (bool, error) {
	if w.closed {
		return false, errors.New("copy into a closed writer")
	}
	if w.err != nil {
		return false, w.err
	}
	f := w.f
	if copies != nil && copies.Off {
		return false, nil
	}
	if refused, _ := copies.state(f.bucket); refused {
		return false, nil
	}
	key, err := objects.Key(f.bucket, path)
	if err != nil {
		return false, nil
	}
	if w.checksummed {
		// An upload created with checksums must be completed with each
		// part's, and a store's answer to a part copy need not hold a
		// usable one (versitygw v1.8.0 gives its source object's, a
		// composite its own completion refuses). An object that begins
		// with a copy is created without them (copyParts); one that had
		// filled parts before its first copy keeps to uploads.
		return false, nil
	}
	buffered := int64(len(*w.buf))
	var fill int64 // bytes of the range that complete the buffered part
	from := off
	switch {
	case buffered == 0:
	case buffered <= foldBytes && off >= buffered && w.precedes(r, off):
		from = off - buffered // the buffered bytes are copied with the range
	case buffered < MinPartBytes:
		fill = MinPartBytes - buffered
	}
	if off+n-(from+fill) < MinPartBytes {
		return false, nil
	}
	return w.copyParts(copies, r, key, from, off, fill, off+n)
}

// precedes reports whether the buffered bytes are those of r just before
// off.
func (w *writer) precedes(r io.ReaderAt, off int64) bool {
	b := *w.buf
	before := make([]byte, len(b))
	if _, err := r.ReadAt(before, off-int64(len(b))); err != nil && !errors.Is(err, io.EOF) {
		return false
	}
	return bytes.Equal(before, b)
}

// copyParts appends the object key's bytes [from, end): with folded, the
// buffered bytes are those before off and are copied with the range
// (from < off); else the buffered bytes make a part of their own, their
// first fill bytes of r at off completing it to S3's smallest part, and
// the rest of the range is copied. A copy to a bucket whose store has not
// yet been seen to take them is made first and waited for: if the store
// refuses it, nothing is appended.
func (w *writer) copyParts(copies *Copies, r io.ReaderAt, key string, from, off, fill, end int64) (bool, error) {
	if err := w.start(false); err != nil {
		return false, err
	}
	f := w.f
	folded := from < off
	var bufNum int32 // the buffered part's number (0: none)
	if len(*w.buf) > 0 && !folded {
		bufNum = w.next()
	}
	pieces := splitCopy(from+fill, end)
	nums := make([]int32, len(pieces))
	for i := range pieces {
		nums[i] = w.next()
	}
	if _, supported := copies.state(f.bucket); !supported {
		p, err := w.copyPart(key, nums[0], pieces[0])
		if err != nil {
			if refusal(err) {
				copies.set(f.bucket, false, err)
				w.unnumber(bufNum, nums)
				return false, nil
			}
			w.err = err
			return false, err
		}
		copies.set(f.bucket, true, nil)
		w.done = append(w.done, p)
		pieces, nums = pieces[1:], nums[1:]
	}
	switch {
	case folded:
		*w.buf = (*w.buf)[:0]
	case bufNum > 0:
		if fill > 0 {
			if err := w.fill(r, off, fill); err != nil {
				return false, err
			}
		}
		if err := w.sendNumbered(bufNum); err != nil {
			return false, err
		}
	}
	for i, p := range pieces {
		if err := w.queue(func() partResult {
			part, err := w.copyPart(key, nums[i], p)
			return partResult{part: part, acknowledged: true, err: err}
		}); err != nil {
			return false, err
		}
	}
	return true, nil
}

// unnumber gives back part numbers taken for a copy that was not made;
// they are the last taken.
func (w *writer) unnumber(bufNum int32, nums []int32) {
	w.parts -= int32(len(nums))
	if bufNum > 0 {
		w.parts--
	}
}

// fill reads n bytes of r at off into the buffered part.
func (w *writer) fill(r io.ReaderAt, off, n int64) error {
	b := make([]byte, n)
	if _, err := r.ReadAt(b, off); err != nil && !(errors.Is(err, io.EOF) && int64(len(b)) == n) {
		w.err = fmt.Errorf("write %s: read the %d bytes before a copy: %w", w.name, n, err)
		return w.err
	}
	*w.buf = append(*w.buf, b...)
	return nil
}

// span is a byte range [start, end) of the source object.
type span struct{ start, end int64 }

// splitCopy cuts [start, end) into part copies under S3's largest part,
// none but the last shorter than the smallest.
func splitCopy(start, end int64) []span {
	var out []span
	for end-start > maxCopyPartBytes {
		out = append(out, span{start, start + maxCopyPartBytes})
		start += maxCopyPartBytes
	}
	if len(out) > 0 && end-start < MinPartBytes {
		out[len(out)-1].end = end
		return out
	}
	return append(out, span{start, end})
}

// copyPart copies span s of the object key into part num.
func (w *writer) copyPart(key string, num int32, s span) (types.CompletedPart, error) {
	f := w.f
	src := f.bucket + "/" + (&url.URL{Path: key}).EscapedPath()
	out, err := f.client.UploadPartCopy(f.ctx, &s3.UploadPartCopyInput{Bucket: aws.String(f.bucket), Key: aws.String(w.key), UploadId: w.uploadID,
		PartNumber: aws.Int32(num), CopySource: aws.String(src), CopySourceRange: aws.String(fmt.Sprintf("bytes=%d-%d", s.start, s.end-1))})
	if err != nil {
		return types.CompletedPart{}, fmt.Errorf("write %s: part %d: copy %d bytes of %s: %w", w.name, num, s.end-s.start, key, err)
	}
	p := types.CompletedPart{PartNumber: aws.Int32(num)}
	if r := out.CopyPartResult; r != nil {
		p.ETag = r.ETag
	}
	return p, nil
}

// sortParts puts the completed parts in the order CompleteMultipartUpload
// wants: copies and uploads finish in any order.
func sortParts(parts []types.CompletedPart) {
	slices.SortFunc(parts, func(a, b types.CompletedPart) int { return int(aws.ToInt32(a.PartNumber) - aws.ToInt32(b.PartNumber)) })
}
