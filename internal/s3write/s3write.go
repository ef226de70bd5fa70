// Package s3write writes the files of a rewrite to S3 from fixed part
// buffers that are reused, without the copies of the generic blob writer.
//
// iceberg-go's S3 file IO writes through gocloud's blob writer, which pipes
// every write into the SDK transfer manager's uploader; the uploader reads
// an object's first part with io.ReadAll, growing and zeroing a buffer up
// to the multipart threshold for every object, after the pipe's copy. In a
// profile of compaction over S3 that was 10% of icekeeper's CPU. Here a
// write is copied once, into a part buffer; an object that fits in one
// part is one PutObject of that buffer, a larger one a multipart upload of
// full parts, two in flight while the next fills. Buffers go back to the
// FS for the next file.
package s3write

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"strings"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/icekeeper/icekeeper/internal/objects"
)

// PartBytes is the size of a part buffer: S3's 5 MiB minimum part with
// room, and 80 GB at S3's 10,000 parts.
const PartBytes = 8 << 20

// inFlight is how many full parts of one object upload while the next
// fills.
const inFlight = 2

// FS is a table's file IO whose Create writes with this package's
// writer; the rest is the IO's own.
type FS struct {
	icebergio.WriteFileIO
	ctx       context.Context
	client    *s3.Client
	bucket    string
	partBytes int
	// free holds idle part buffers. Not a sync.Pool, which every garbage
	// collection empties: a compaction's output of 134 MB then took 48 MB
	// of new buffers for the 24 MB it had in use, each a fresh 8 MiB the
	// system must map and zero.
	free chan *[]byte
}

// freeParts is how many idle part buffers an FS keeps: those of two
// objects being written at once, a part filling and inFlight uploading.
const freeParts = 2 * (inFlight + 1)

// Wrap returns fsys writing through the S3 client under it, for the files
// of the bucket of location (s3://bucket/...), when fsys is iceberg-go's S3
// blob IO; any other IO is returned as it is. ctx is the context of every
// request the writers make.
// An IO that writes through this package already (under a wrapper that
// records what is created, say) is returned as it is.
//
// Its writers can append ranges of other objects of the bucket as part
// copies (CopyRange).
func Wrap(ctx context.Context, fsys icebergio.WriteFileIO, location string) icebergio.WriteFileIO {
	if writesHere(fsys) {
		return fsys
	}
	client := objects.S3Client(fsys)
	bucket, ok := objects.Bucket(location)
	if client == nil || !ok {
		return fsys
	}
	return newFS(ctx, fsys, client, bucket, PartBytes)
}

// writesHere reports whether fsys is an FS, or wraps one (objects.Unwrapper).
func writesHere(fsys icebergio.IO) bool {
	for fsys != nil {
		if _, ok := fsys.(*FS); ok {
			return true
		}
		u, ok := fsys.(objects.Unwrapper)
		if !ok {
			return false
		}
		fsys = u.Unwrap()
	}
	return false
}

// Unwrap is the IO under f (objects.Unwrapper).
func (f *FS) Unwrap() icebergio.IO { return f.WriteFileIO }

func newFS(ctx context.Context, fsys icebergio.WriteFileIO, client *s3.Client, bucket string, partBytes int) *FS {
	return &FS{WriteFileIO: fsys, ctx: ctx, client: client, bucket: bucket, partBytes: partBytes, free: make(chan *[]byte, freeParts)}
}

// Create starts writing the object at name, which must be in the FS's
// bucket under a key that names only itself (objects.Key).
func (f *FS) Create(name string) (icebergio.FileWriter, error) {
	key, err := objects.Key(f.bucket, name)
	if err != nil {
		return nil, &fs.PathError{Op: "create", Path: name, Err: err}
	}
	return &writer{f: f, name: name, key: key, buf: f.get()}, nil
}

func (f *FS) get() *[]byte {
	select {
	case b := <-f.free:
		return b
	default:
		b := make([]byte, 0, f.partBytes)
		return &b
	}
}

func (f *FS) put(b *[]byte) {
	*b = (*b)[:0]
	select {
	case f.free <- b:
	default:
	}
}

// writer is one object being written.
type writer struct {
	f        *FS
	name     string
	key      string
	buf      *[]byte // the part filling
	uploadID *string // set once the object is a multipart upload
	// checksummed: the upload was created with CRC32 checksums, which its
	// completion must then give for every part (see CopyRange).
	checksummed bool
	parts       int32 // part numbers taken
	done        []types.CompletedPart
	pending     []chan partResult // the parts in flight, in order
	err         error
	closed      bool
	// unacknowledged: the store answered a part (or the one PutObject)
	// without its own digest of the bytes sent (see Acknowledged).
	unacknowledged bool
}

type partResult struct {
	part types.CompletedPart
	// acknowledged: the store answered an uploaded part with its digest
	// of the bytes sent; a part copy always is.
	acknowledged bool
	err          error
}

func (w *writer) Write(p []byte) (int, error) {
	if w.closed {
		return 0, fs.ErrClosed
	}
	n := 0
	for len(p) > 0 && w.err == nil {
		b := *w.buf
		k := copy(b[len(b):cap(b)], p)
		*w.buf = b[:len(b)+k]
		n += k
		p = p[k:]
		if len(*w.buf) == cap(*w.buf) && len(p) > 0 {
			// A full part with more to come: it uploads as a part of a
			// multipart upload. The last part waits for Close, which
			// may make the object one PutObject.
			w.err = w.sendPart()
		}
	}
	return n, w.err
}

// ReadFrom writes what r holds, reading it into the part buffers.
func (w *writer) ReadFrom(r io.Reader) (int64, error) {
	if w.closed {
		return 0, fs.ErrClosed
	}
	var n int64
	for w.err == nil {
		if len(*w.buf) == cap(*w.buf) {
			if w.err = w.sendPart(); w.err != nil {
				break
			}
		}
		b := *w.buf
		k, err := r.Read(b[len(b):cap(b)])
		*w.buf = b[:len(b)+k]
		n += int64(k)
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			// The object must not be completed from what was read.
			w.err = fmt.Errorf("write %s: %w", w.name, err)
		}
	}
	return n, w.err
}

// sendPart uploads the filled buffer as the next part, keeping at most
// inFlight in flight, and starts a new buffer.
func (w *writer) sendPart() error {
	if err := w.start(true); err != nil {
		return err
	}
	return w.sendNumbered(w.next())
}

// start makes the object a multipart upload, once: with checksums, the
// parts' CRC32 checksums, which the SDK computes as it sends them (and the
// server checks as it takes each part), are checked again by the server
// when the upload completes.
func (w *writer) start(checksums bool) error {
	if w.uploadID != nil {
		return nil
	}
	in := &s3.CreateMultipartUploadInput{Bucket: aws.String(w.f.bucket), Key: aws.String(w.key)}
	if checksums {
		in.ChecksumAlgorithm = types.ChecksumAlgorithmCrc32
	}
	out, err := w.f.client.CreateMultipartUpload(w.f.ctx, in)
	if err != nil {
		w.err = fmt.Errorf("write %s: start the upload: %w", w.name, err)
		return w.err
	}
	w.uploadID, w.checksummed = out.UploadId, checksums
	return nil
}

// next takes the next part number.
func (w *writer) next() int32 {
	w.parts++
	return w.parts
}

// sendNumbered uploads the filled buffer as part num and starts a new
// buffer.
func (w *writer) sendNumbered(num int32) error {
	ctx := w.f.ctx
	buf := w.buf
	w.buf = w.f.get()
	return w.queue(func() partResult {
		defer w.f.put(buf)
		out, err := w.f.client.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String(w.f.bucket), Key: aws.String(w.key), UploadId: w.uploadID,
			PartNumber: aws.Int32(num), Body: bytes.NewReader(*buf), ContentLength: aws.Int64(int64(len(*buf))), ChecksumAlgorithm: types.ChecksumAlgorithmCrc32})
		if err != nil {
			return partResult{err: fmt.Errorf("write %s: part %d: %w", w.name, num, err)}
		}
		return partResult{part: types.CompletedPart{PartNumber: aws.Int32(num), ETag: out.ETag, ChecksumCRC32: out.ChecksumCRC32},
			acknowledged: acknowledged(*buf, out.ChecksumCRC32, out.ETag)}
	})
}

// queue runs send, an upload or a copy of one part, keeping at most
// inFlight in flight.
func (w *writer) queue(send func() partResult) error {
	if len(w.pending) == inFlight {
		if err := w.collect(); err != nil {
			w.err = err
			return err
		}
	}
	ch := make(chan partResult, 1)
	w.pending = append(w.pending, ch)
	go func() { ch <- send() }()
	return nil
}

// collect waits for the oldest part in flight.
func (w *writer) collect() error {
	r := <-w.pending[0]
	w.pending = w.pending[1:]
	if r.err != nil {
		return r.err
	}
	w.done = append(w.done, r.part)
	w.unacknowledged = w.unacknowledged || !r.acknowledged
	return nil
}

// Close writes the object: one PutObject when it fits in a part, else the
// last part and the multipart upload's completion. On any failure the
// multipart upload is aborted, so that no part stays billed, and the
// error says what failed.
func (w *writer) Close() error {
	if w.closed {
		return fs.ErrClosed
	}
	w.closed = true
	defer func() {
		if w.buf != nil {
			w.f.put(w.buf)
			w.buf = nil
		}
	}()
	ctx := w.f.ctx
	if w.uploadID == nil && w.err == nil {
		b := *w.buf
		out, err := w.f.client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(w.f.bucket), Key: aws.String(w.key),
			Body: bytes.NewReader(b), ContentLength: aws.Int64(int64(len(b)))})
		if err != nil {
			return fmt.Errorf("write %s: %w", w.name, err)
		}
		w.unacknowledged = !acknowledged(b, out.ChecksumCRC32, out.ETag)
		return nil
	}
	if w.err == nil && len(*w.buf) > 0 {
		w.err = w.sendPart()
	}
	for len(w.pending) > 0 {
		if err := w.collect(); err != nil && w.err == nil {
			w.err = err
		}
	}
	if w.err == nil {
		sortParts(w.done)
		if !w.checksummed {
			// An upload created without checksums takes none at its
			// completion; each part's was checked as it was taken.
			for i := range w.done {
				w.done[i].ChecksumCRC32 = nil
			}
		}
		_, w.err = w.f.client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String(w.f.bucket), Key: aws.String(w.key),
			UploadId: w.uploadID, MultipartUpload: &types.CompletedMultipartUpload{Parts: w.done}})
		if w.err == nil {
			return nil
		}
		w.err = fmt.Errorf("write %s: complete the upload: %w", w.name, w.err)
	}
	if w.uploadID != nil {
		// The abort runs even when ctx ended: parts left behind cost
		// storage until a lifecycle rule removes them.
		if _, err := w.f.client.AbortMultipartUpload(context.WithoutCancel(ctx), &s3.AbortMultipartUploadInput{Bucket: aws.String(w.f.bucket),
			Key: aws.String(w.key), UploadId: w.uploadID}); err != nil {
			return errors.Join(w.err, fmt.Errorf("abort the upload of %s: %w", w.name, err))
		}
	}
	return w.err
}

// Acknowledged reports, once Close has returned nil, whether the store
// answered every part the writer uploaded (and an object written with one
// PutObject) with its own digest of the bytes it took, equal to theirs:
// then the object holds the bytes written, but for ranges the store
// copied (CopyRange), and a reader may take them from where the writer
// kept them instead of reading the object back.
func (w *writer) Acknowledged() bool {
	return w.closed && w.err == nil && !w.unacknowledged
}

// acknowledged reports whether a store's answer to an upload of b gives
// its own digest of b: the CRC32 checksum it computed where it answers
// one (S3, versitygw), else an ETag that is b's MD5, as S3, SeaweedFS and
// versitygw give an object or part stored without a customer's key. A
// store that answers neither, or an ETag of another form, acknowledges
// nothing: the object is then read back.
func acknowledged(b []byte, checksum, etag *string) bool {
	if c := aws.ToString(checksum); c != "" {
		var sum [4]byte
		binary.BigEndian.PutUint32(sum[:], crc32.ChecksumIEEE(b))
		return c == base64.StdEncoding.EncodeToString(sum[:])
	}
	e := strings.Trim(aws.ToString(etag), `"`)
	if len(e) != 2*md5.Size {
		return false
	}
	sum := md5.Sum(b)
	return strings.EqualFold(e, hex.EncodeToString(sum[:]))
}
