// Package deploy_test checks the deployment files under deploy/: the Helm
// chart renders, every object it renders decodes strictly into its
// Kubernetes type, and the configuration it ships is one icekeeper loads;
// the alert rules pass promtool's checks and rule tests.
package deploy_test

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/icekeeper/icekeeper/configs"
	"github.com/icekeeper/icekeeper/internal/testkit/servers"
)

// serviceMonitor is the part of prometheus-operator's ServiceMonitor the
// chart sets; it is a CRD, not in k8s.io/api, so decoding into it catches
// misspelt keys of ours, not every invalid value.
type serviceMonitor struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name   string            `json:"name"`
		Labels map[string]string `json:"labels"`
	} `json:"metadata"`
	Spec struct {
		Selector struct {
			MatchLabels map[string]string `json:"matchLabels"`
		} `json:"selector"`
		Endpoints []struct {
			Port          string `json:"port"`
			Path          string `json:"path"`
			Interval      string `json:"interval"`
			Authorization struct {
				Credentials corev1.SecretKeySelector `json:"credentials"`
			} `json:"authorization"`
		} `json:"endpoints"`
	} `json:"spec"`
}

// The alert rules are valid, and fire when they should and not before:
// promtool's own rule tests in prometheus/alerts_test.yaml.
func TestAlertRules(t *testing.T) {
	promtool := servers.Tool(t, "promtool")
	for _, args := range [][]string{{"check", "rules", "prometheus/alerts.yaml"}, {"test", "rules", "prometheus/alerts_test.yaml"}} {
		if out, err := exec.Command(promtool, args...).CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// strict decodes one YAML document into v, refusing unknown fields.
func strict(doc []byte, v any) error {
	js, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// The chart renders with everything on, and every object decodes strictly.
// With the default values it renders no ServiceMonitor (a CRD: `helm
// install` would fail on a cluster without the Prometheus Operator) and no
// CronJob.
func TestHelmChart(t *testing.T) {
	bin := servers.Tool(t, "helm")
	kinds := render(t, bin, "--set", "cronJob.enabled=true", "--set", "serviceMonitor.enabled=true")
	for _, k := range []string{"Deployment", "Service", "ConfigMap", "CronJob", "ServiceMonitor"} {
		if kinds[k] != 1 {
			t.Errorf("everything on: rendered %d %s, want 1 (%v)", kinds[k], k, kinds)
		}
	}
	kinds = render(t, bin)
	for k, want := range map[string]int{"Deployment": 1, "Service": 1, "ConfigMap": 1, "CronJob": 0, "ServiceMonitor": 0} {
		if kinds[k] != want {
			t.Errorf("default values: rendered %d %s, want %d (%v)", kinds[k], k, want, kinds)
		}
	}
}

// render runs `helm template` on the chart with args, decodes every object
// strictly into its type, checks the Deployment and the configuration, and
// returns how many objects of each kind it rendered.
func render(t *testing.T, bin string, args ...string) map[string]int {
	t.Helper()
	out, err := exec.Command(bin, append([]string{"template", "ik", "helm/icekeeper"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("helm template %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	kinds := map[string]int{}
	for _, doc := range bytes.Split(out, []byte("\n---")) {
		if len(bytes.TrimSpace(doc)) == 0 || bytes.HasPrefix(bytes.TrimSpace(doc), []byte("# Source")) && !bytes.Contains(doc, []byte("kind:")) {
			continue
		}
		var head struct{ Kind string }
		if err := yaml.Unmarshal(doc, &head); err != nil {
			t.Fatalf("%v in\n%s", err, doc)
		}
		kinds[head.Kind]++
		var obj any
		switch head.Kind {
		case "Deployment":
			var d appsv1.Deployment
			obj = &d
			defer func() { checkDeployment(t, &d) }()
		case "Service":
			obj = &corev1.Service{}
		case "ConfigMap":
			var cm corev1.ConfigMap
			obj = &cm
			defer func() { checkConfig(t, cm.Data["icekeeper.yaml"]) }()
		case "CronJob":
			obj = &batchv1.CronJob{}
		case "ServiceMonitor":
			obj = &serviceMonitor{}
		default:
			t.Fatalf("unexpected kind %q", head.Kind)
		}
		if err := strict(doc, obj); err != nil {
			t.Errorf("%s does not decode strictly: %v\n%s", head.Kind, err, doc)
		}
	}
	return kinds
}

func checkDeployment(t *testing.T, d *appsv1.Deployment) {
	c := d.Spec.Template.Spec.Containers[0]
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
		t.Errorf("container security context %+v", sc)
	}
	if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" || c.LivenessProbe == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" {
		t.Errorf("probes %+v %+v", c.ReadinessProbe, c.LivenessProbe)
	}
	if len(c.EnvFrom) != 1 || c.EnvFrom[0].SecretRef == nil || c.Resources.Requests.Memory().IsZero() {
		t.Errorf("secrets %+v, resources %+v", c.EnvFrom, c.Resources)
	}
	if d.Spec.Replicas == nil || *d.Spec.Replicas < 2 {
		t.Errorf("replicas %v", d.Spec.Replicas)
	}
}

// The chart's configuration is one icekeeper loads, with the variables
// its Secret provides.
func checkConfig(t *testing.T, data string) {
	_, err := configs.Parse("icekeeper.yaml", []byte(data), func(name string) (string, bool) { return "x-" + name, true })
	if err != nil {
		t.Errorf("the chart's configuration does not load: %v\n%s", err, data)
	}
}
