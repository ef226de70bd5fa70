package planner

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// outcome names what a plan of one observed object did with it.
func outcome(p RemovalPlan) string {
	var out []string
	add := func(n int, what string) {
		if n > 0 {
			out = append(out, what)
		}
	}
	add(p.Referenced, "referenced")
	add(p.UnsafeNames, "unsafe name")
	add(p.OtherTables, "other table")
	add(p.TooYoung, "too young")
	add(p.StillPending, "pending")
	add(p.Protected, "protected")
	add(len(p.Mark), "mark")
	add(len(p.Unmark), "unmark")
	add(len(p.Delete), "delete")
	add(len(p.Vanished), "vanished")
	return fmt.Sprint(out)
}

func TestRemoval(t *testing.T) {
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	rules := RemovalRules{UnreferencedAge: 3 * day, NonCurrentAge: 10 * day}
	type mark struct {
		age       time.Duration
		protected bool
	}
	for _, tc := range []struct {
		name  string
		where Standing
		age   time.Duration // of the object
		mark  *mark
		want  string
		unref bool // counted unreferenced
	}{
		{"referenced", StandingReferenced, 100 * day, nil, "[referenced]", false},
		{"referenced again: unmark", StandingReferenced, 30 * day, &mark{20 * day, false}, "[referenced unmark]", false},
		{"protected and referenced again: unmark", StandingReferenced, 30 * day, &mark{20 * day, true}, "[referenced unmark]", false},
		{"unreferenced, too young to mark", StandingUnreferenced, day, nil, "[too young]", true},
		{"unreferenced and old: mark", StandingUnreferenced, 4 * day, nil, "[mark]", true},
		{"exactly unreferencedDays old: mark", StandingUnreferenced, 3 * day, nil, "[mark]", true},
		{"marked long enough: delete", StandingUnreferenced, 30 * day, &mark{11 * day, false}, "[delete]", true},
		{"marked exactly nonCurrentDays ago: delete", StandingUnreferenced, 0, &mark{10 * day, false}, "[delete]", true},
		{"marked recently: wait", StandingUnreferenced, 30 * day, &mark{2 * day, false}, "[pending]", true},
		{"protected, long past due: keep", StandingUnreferenced, 30 * day, &mark{20 * day, true}, "[protected]", true},
		{"unsafe name: never marked", StandingUnsafeName, 30 * day, nil, "[unsafe name]", false},
		{"unsafe name with an old mark: unmark, never delete", StandingUnsafeName, 30 * day, &mark{20 * day, false}, "[unsafe name unmark]", false},
		{"another table's: left alone", StandingOtherTable, 30 * day, nil, "[other table]", false},
		{"another table's with an old mark: unmark, never delete", StandingOtherTable, 30 * day, &mark{20 * day, false}, "[other table unmark]", false},
		{"the zero standing keeps", Standing(0), 30 * day, &mark{20 * day, false}, "[referenced unmark]", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const path = "s3://b/t/data/f.parquet"
			var marks []Mark
			if tc.mark != nil {
				m := Mark{Path: path, Size: 7, MarkedAt: now.Add(-tc.mark.age)}
				if tc.mark.protected {
					m.ProtectedAt = now.Add(-time.Hour)
				}
				marks = append(marks, m)
			}
			p := NewRemoval(rules, now, marks)
			p.Observe(RemovalObject{Path: path, Size: 7, LastModified: now.Add(-tc.age)}, tc.where)
			plan := p.Finish()
			if got := outcome(plan); got != tc.want {
				t.Fatalf("%s, want %s", got, tc.want)
			}
			if plan.Listed != 1 || plan.ListedBytes != 7 || (plan.Unreferenced == 1) != tc.unref {
				t.Fatalf("counts %+v", plan)
			}
			for _, m := range plan.Mark {
				if m.Path != path || m.Size != 7 || !m.MarkedAt.Equal(now) || !m.LastModified.Equal(now.Add(-tc.age)) {
					t.Fatalf("mark %+v", m)
				}
			}
			for _, m := range plan.Delete {
				if m != marks[0] {
					t.Fatalf("delete %+v, want the mark %+v", m, marks[0])
				}
			}
		})
	}
}

// A pass over many objects: counts add up, marks of objects storage no
// longer lists have vanished, and unsafe names are listed up to the bound.
func TestRemovalPass(t *testing.T) {
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	marks := []Mark{
		{Path: "s3://b/t/data/due", MarkedAt: now.Add(-11 * day)},
		{Path: "s3://b/t/data/gone", MarkedAt: now.Add(-20 * day)},
		{Path: "s3://b/t/data/lost", MarkedAt: now.Add(-20 * day), ProtectedAt: now.Add(-15 * day)},
	}
	p := NewRemoval(RemovalRules{UnreferencedAge: 3 * day, NonCurrentAge: 10 * day}, now, marks)
	p.Observe(RemovalObject{Path: "s3://b/t/data/live", Size: 1, LastModified: now.Add(-day)}, StandingReferenced)
	p.Observe(RemovalObject{Path: "s3://b/t/data/due", Size: 2, LastModified: now.Add(-30 * day)}, StandingUnreferenced)
	for i := range ListedPaths + 5 {
		p.Observe(RemovalObject{Path: fmt.Sprintf("s3://b/t//%d", i), Size: 1, LastModified: now.Add(-30 * day)}, StandingUnsafeName)
	}
	plan := p.Finish()
	if plan.Listed != ListedPaths+7 || plan.ListedBytes != ListedPaths+8 || plan.Referenced != 1 || plan.Unreferenced != 1 ||
		plan.UnsafeNames != ListedPaths+5 || len(plan.UnsafePaths) != ListedPaths || len(plan.Delete) != 1 || len(plan.Mark) != 0 {
		t.Fatalf("counts %+v", plan)
	}
	slices.Sort(plan.Vanished)
	if !slices.Equal(plan.Vanished, []string{"s3://b/t/data/gone", "s3://b/t/data/lost"}) {
		t.Fatalf("vanished %v", plan.Vanished)
	}
}
