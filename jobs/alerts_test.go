package jobs

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"gopkg.in/yaml.v3"
)

// The alert rules shipped in deploy/prometheus use only metrics icekeeper
// exports, and each says what fired. (This is not promtool: the PromQL
// itself is not parsed here.)
func TestAlertRulesUseOurMetrics(t *testing.T) {
	known := map[string]bool{"icekeeper_job_runs_total": true, "icekeeper_job_run_duration_seconds": true,
		"icekeeper_lease_takeovers_total": true, "icekeeper_queue_depth": true}
	for _, name := range Counts {
		known[name] = true
	}
	descs := make(chan *prometheus.Desc, 64)
	(&tableCollector{}).Describe(descs)
	close(descs)
	nameOf := regexp.MustCompile(`fqName: "([a-z_]+)"`)
	for d := range descs {
		known[nameOf.FindStringSubmatch(d.String())[1]] = true
	}

	data, err := os.ReadFile("../deploy/prometheus/alerts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Groups []struct {
			Name  string `yaml:"name"`
			Rules []struct {
				Alert       string            `yaml:"alert"`
				Expr        string            `yaml:"expr"`
				For         string            `yaml:"for"`
				Labels      map[string]string `yaml:"labels"`
				Annotations map[string]string `yaml:"annotations"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	dec.KnownFields(true)
	if err := dec.Decode(&file); err != nil {
		t.Fatal(err)
	}
	metric := regexp.MustCompile(`icekeeper_[a-z_]+`)
	rules := 0
	for _, g := range file.Groups {
		for _, r := range g.Rules {
			rules++
			if r.Alert == "" || r.Expr == "" || r.Annotations["summary"] == "" || r.Labels["severity"] == "" {
				t.Errorf("incomplete rule %+v", r)
			}
			for _, m := range metric.FindAllString(r.Expr, -1) {
				if !known[m] {
					t.Errorf("%s uses %s, which icekeeper does not export", r.Alert, m)
				}
			}
		}
	}
	if rules < 5 {
		t.Fatalf("%d rules", rules)
	}
}
