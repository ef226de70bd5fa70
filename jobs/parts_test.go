package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/riverqueue/river/rivertype"

	"github.com/icekeeper/icekeeper/internal/state"
	"github.com/icekeeper/icekeeper/maintenance"
)

// partsJob fans out parts numbered 0..n-1; a part's output is its square,
// the run's figure their sum. Each replica has its own, so that the parts
// each did can be counted.
type partsJob struct {
	n    int
	fail int // a part that always fails; -1: none
	mu   sync.Mutex
	did  map[int]int
	sum  int
}

func newPartsJob(n int) *partsJob { return &partsJob{n: n, fail: -1, did: map[int]int{}} }

// def is the job's definition.
func (p *partsJob) def() Job {
	d := define(maintenance.Compaction, p.run)
	d.RunPart = p.runPart
	return d
}

func (p *partsJob) run(ctx context.Context, r *Run[struct{}], fig *testFigures) error {
	opts := r.Options
	if opts.Fanout == nil || p.n < opts.Fanout.MinParts() {
		return errors.New("no fan-out")
	}
	parts := make([]json.RawMessage, p.n)
	for i := range parts {
		parts[i] = json.RawMessage(fmt.Sprint(i))
	}
	seen := map[int]bool{}
	sum := 0
	err := opts.Fanout.Fan(ctx, parts, func(r PartResult) error {
		if r.Err != nil {
			return r.Err
		}
		if seen[r.Index] {
			return fmt.Errorf("part %d passed on twice", r.Index)
		}
		seen[r.Index] = true
		var sq int
		if err := json.Unmarshal(r.Output, &sq); err != nil || sq != r.Index*r.Index {
			return fmt.Errorf("part %d output %s: %v", r.Index, r.Output, err)
		}
		sum += sq
		return nil
	})
	p.mu.Lock()
	p.sum = sum
	p.mu.Unlock()
	fig.Values = map[string]float64{"sum": float64(sum)}
	return err
}

func (p *partsJob) runPart(ctx context.Context, _ Target, raw json.RawMessage) (json.RawMessage, error) {
	var i int
	if err := json.Unmarshal(raw, &i); err != nil {
		return nil, err
	}
	p.mu.Lock()
	p.did[i]++
	p.mu.Unlock()
	if i == p.fail {
		return nil, errors.New("injected part failure")
	}
	time.Sleep(10 * time.Millisecond)
	return json.Marshal(i * i)
}

func (p *partsJob) parts() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, c := range p.did {
		n += c
	}
	return n
}

// A run with enough parts fans them out to the workers of both replicas:
// every part runs once, its output reaches the coordinator once, and the
// run succeeds with all of them.
func TestFanOutAcrossReplicas(t *testing.T) {
	s1, s2 := shared(t)
	reg := registry(t)
	const n = 24
	j1, j2 := newPartsJob(n), newPartsJob(n)
	tune := func(e *Engine) { e.FanOutParts = 4 }
	e1 := newEngine(t, s1, reg, "replica-1", map[maintenance.JobType]Job{maintenance.Compaction: j1.def()}, tune)
	e2 := newEngine(t, s2, reg, "replica-2", map[maintenance.JobType]Job{maintenance.Compaction: j2.def()}, tune)
	enqueue(t, e1, key(1), maintenance.Compaction)
	stop1, stop2 := start(t, e1), start(t, e2)
	waitEmpty(t, s1, 30*time.Second)
	stop1()
	stop2()
	runs, err := s1.Runs(context.Background(), key(1), maintenance.Compaction, 5)
	if err != nil || len(runs) != 1 || runs[0].Status != state.Successful {
		t.Fatalf("runs: %+v %v", runs, err)
	}
	want := 0
	for i := range n {
		want += i * i
		if d := j1.did[i] + j2.did[i]; d != 1 {
			t.Errorf("part %d ran %d times", i, d)
		}
	}
	if got := j1.sum + j2.sum; got != want {
		t.Fatalf("the coordinator summed %d, want %d", got, want)
	}
	if j1.parts() == 0 || j2.parts() == 0 {
		t.Fatalf("parts ran %d on one replica and %d on the other; want both to work", j1.parts(), j2.parts())
	}
}

// A part that keeps failing is retried, then fails the run with its error;
// the parts not finished are cancelled.
func TestFanOutPartFails(t *testing.T) {
	s, _ := shared(t)
	job := newPartsJob(6)
	job.fail = 0
	e := newEngine(t, s, registry(t), "replica", map[maintenance.JobType]Job{maintenance.Compaction: job.def()}, func(e *Engine) {
		e.FanOutParts, e.PartParallelism, e.partRetry = 2, 1, 10*time.Millisecond
	})
	enqueue(t, e, key(1), maintenance.Compaction)
	stop := start(t, e)
	waitEmpty(t, s, 30*time.Second)
	stop()
	runs, _ := s.Runs(context.Background(), key(1), maintenance.Compaction, 5)
	if len(runs) != 1 || runs[0].Status != state.Failed || !contains(runs[0].FailureMessage, "injected part failure", "5 attempts") {
		t.Fatalf("runs: %+v", runs)
	}
	if job.did[0] != partAttempts {
		t.Fatalf("the failing part ran %d times, want %d", job.did[0], partAttempts)
	}
}

// A part whose coordinator no longer holds the table lease (it died, or
// gave up) cancels itself without doing its work.
func TestPartOfAStoppedRun(t *testing.T) {
	s, _ := shared(t)
	job := newPartsJob(1)
	e := newEngine(t, s, registry(t), "replica", map[maintenance.JobType]Job{maintenance.Compaction: job.def()}, nil)
	k := key(1)
	res, err := e.client.Insert(context.Background(), PartArgs{Bucket: k.Bucket, Namespace: k.Namespace, Name: k.Name,
		Type: maintenance.Compaction, Coordinator: "gone/1/1", Part: json.RawMessage("0")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	stop := start(t, e)
	defer stop()
	deadline := time.Now().Add(10 * time.Second)
	for {
		j, err := e.client.JobGet(context.Background(), res.Job.ID)
		if err != nil {
			t.Fatal(err)
		}
		if j.State == rivertype.JobStateCancelled {
			if n := job.parts(); n != 0 {
				t.Fatalf("the part of a stopped run ran %d times", n)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("part is %s, want cancelled", j.State)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func contains(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
