package screen

import (
	"slices"
	"testing"
)

func TestLines(t *testing.T) {
	got := Lines("bar 1/9\r\x1b[Klog é\nbar 2/9\rba\nlast")
	if want := []string{"log é", "bar 2/9", "last"}; !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	if got := Lines("abcdef\rxy\x1b[K\n"); !slices.Equal(got, []string{"xy"}) {
		t.Fatalf("erase: %q", got)
	}
}
