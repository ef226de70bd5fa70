package jobs

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"gopkg.in/yaml.v3"
)

// registrations records the collectors NewMetrics registers.
type registrations struct{ collectors []prometheus.Collector }

func (r *registrations) Register(c prometheus.Collector) error {
	r.collectors = append(r.collectors, c)
	return nil
}

func (r *registrations) MustRegister(cs ...prometheus.Collector) {
	r.collectors = append(r.collectors, cs...)
}

func (r *registrations) Unregister(prometheus.Collector) bool { return false }

// exported lists the names of the metrics icekeeper exports: every
// collector NewMetrics registers, described, with the series a histogram
// adds.
func exported() map[string]bool {
	var reg registrations
	NewMetrics(&reg, nil)
	descs := make(chan *prometheus.Desc, 256)
	for _, c := range reg.collectors {
		c.Describe(descs)
	}
	close(descs)
	nameOf := regexp.MustCompile(`fqName: "([a-z_]+)"`)
	known := map[string]bool{}
	for d := range descs {
		name := nameOf.FindStringSubmatch(d.String())[1]
		for _, suffix := range []string{"", "_bucket", "_sum", "_count"} {
			known[name+suffix] = true
		}
	}
	return known
}

var metricName = regexp.MustCompile(`icekeeper_[a-z_]+`)

// The Grafana dashboard in deploy/grafana queries only metrics icekeeper
// exports, and is valid JSON with panels.
func TestDashboardUsesOurMetrics(t *testing.T) {
	known := exported()
	data, err := os.ReadFile("../deploy/grafana/icekeeper.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(data, &dash); err != nil || len(dash.Panels) < 5 {
		t.Fatalf("dashboard: %d panels, %v", len(dash.Panels), err)
	}
	for _, p := range dash.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q queries nothing", p.Title)
		}
		for _, q := range p.Targets {
			for _, m := range metricName.FindAllString(q.Expr, -1) {
				if !known[m] {
					t.Errorf("panel %q uses %s, which icekeeper does not export", p.Title, m)
				}
			}
		}
	}
}

// The alert rules shipped in deploy/prometheus use only metrics icekeeper
// exports, and each says what fired. (This is not promtool: the PromQL
// itself is not parsed here.)
func TestAlertRulesUseOurMetrics(t *testing.T) {
	known := exported()

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
	rules := 0
	for _, g := range file.Groups {
		for _, r := range g.Rules {
			rules++
			if r.Alert == "" || r.Expr == "" || r.Annotations["summary"] == "" || r.Labels["severity"] == "" {
				t.Errorf("incomplete rule %+v", r)
			}
			for _, m := range metricName.FindAllString(r.Expr, -1) {
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
