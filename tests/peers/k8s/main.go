// Command k8scheck decodes every object of a rendered manifest (`helm template … | k8scheck`) strictly against the
// Kubernetes API types: an unknown or misspelt field, a wrong type or an unknown kind is an error, as the API
// server's strict field validation would make it. It also checks what the chart promises about its objects (the
// StatefulSet's Service is headless and publishes not-ready pods, probes and mounts name what exists, the pods run
// as a fixed non-root user on a read-only root). No cluster is needed. Prints the objects counted by kind; exit 1
// with the reasons on stderr when anything is wrong.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	kyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// The fields of the Prometheus Operator's ServiceMonitor (monitoring.coreos.com/v1) that a chart may set here;
// the CRD is not a Go dependency worth its weight, so anything else is refused as unknown.
type serviceMonitor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		JobLabel          string               `json:"jobLabel,omitempty"`
		Selector          metav1.LabelSelector `json:"selector"`
		NamespaceSelector *struct {
			Any        bool     `json:"any,omitempty"`
			MatchNames []string `json:"matchNames,omitempty"`
		} `json:"namespaceSelector,omitempty"`
		Endpoints []struct {
			Port          string `json:"port,omitempty"`
			Path          string `json:"path,omitempty"`
			Scheme        string `json:"scheme,omitempty"`
			Interval      string `json:"interval,omitempty"`
			ScrapeTimeout string `json:"scrapeTimeout,omitempty"`
			HonorLabels   bool   `json:"honorLabels,omitempty"`
			TLSConfig     *struct {
				CAFile             string `json:"caFile,omitempty"`
				CertFile           string `json:"certFile,omitempty"`
				KeyFile            string `json:"keyFile,omitempty"`
				ServerName         string `json:"serverName,omitempty"`
				InsecureSkipVerify bool   `json:"insecureSkipVerify,omitempty"`
			} `json:"tlsConfig,omitempty"`
		} `json:"endpoints"`
	} `json:"spec"`
}

type rendered struct {
	services     map[string]*corev1.Service
	statefulSets []*appsv1.StatefulSet
	configMaps   map[string]bool
	counts       map[string]int
}

func main() {
	r := rendered{services: map[string]*corev1.Service{}, configMaps: map[string]bool{}, counts: map[string]int{}}
	var problems []string
	reader := kyaml.NewYAMLReader(bufio.NewReader(os.Stdin))
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			fail([]string{fmt.Sprintf("reading the manifest: %v", err)})
		}
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue
		}
		if err := r.decode(doc); err != nil {
			problems = append(problems, err.Error())
		}
	}
	problems = append(problems, r.check()...)
	if len(problems) > 0 {
		fail(problems)
	}
	kinds := make([]string, 0, len(r.counts))
	total := 0
	for k, n := range r.counts {
		kinds = append(kinds, fmt.Sprintf("%s=%d", k, n))
		total += n
	}
	sort.Strings(kinds)
	fmt.Printf("%d objects decoded strictly: %s\n", total, strings.Join(kinds, " "))
}

func stripComments(doc []byte) []byte {
	var out bytes.Buffer
	for _, line := range bytes.Split(doc, []byte("\n")) {
		if !bytes.HasPrefix(bytes.TrimSpace(line), []byte("#")) {
			out.Write(line)
			out.WriteByte('\n')
		}
	}
	return out.Bytes()
}

func (r *rendered) decode(doc []byte) error {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return fmt.Errorf("not an object: %v", err)
	}
	key := tm.APIVersion + "/" + tm.Kind
	var obj interface{}
	var meta *metav1.ObjectMeta
	switch key {
	case "v1/ConfigMap":
		o := &corev1.ConfigMap{}
		obj, meta = o, &o.ObjectMeta
	case "v1/Service":
		o := &corev1.Service{}
		obj, meta = o, &o.ObjectMeta
	case "apps/v1/StatefulSet":
		o := &appsv1.StatefulSet{}
		obj, meta = o, &o.ObjectMeta
	case "policy/v1/PodDisruptionBudget":
		o := &policyv1.PodDisruptionBudget{}
		obj, meta = o, &o.ObjectMeta
	case "monitoring.coreos.com/v1/ServiceMonitor":
		o := &serviceMonitor{}
		obj, meta = o, &o.ObjectMeta
	default:
		return fmt.Errorf("%s: a kind this checker does not know (add it with its Go type)", key)
	}
	if err := yaml.UnmarshalStrict(doc, obj); err != nil {
		return fmt.Errorf("%s: %v", key, err)
	}
	for _, msg := range validation.IsDNS1123Subdomain(meta.Name) {
		return fmt.Errorf("%s %q: name: %s", key, meta.Name, msg)
	}
	r.counts[tm.Kind]++
	switch o := obj.(type) {
	case *corev1.Service:
		for _, msg := range validation.IsDNS1035Label(o.Name) {
			return fmt.Errorf("Service %q: name: %s", o.Name, msg)
		}
		r.services[o.Name] = o
	case *appsv1.StatefulSet:
		r.statefulSets = append(r.statefulSets, o)
	case *corev1.ConfigMap:
		r.configMaps[o.Name] = true
	}
	return nil
}

// check: what the chart promises, across objects.
func (r *rendered) check() []string {
	var p []string
	bad := func(format string, a ...interface{}) { p = append(p, fmt.Sprintf(format, a...)) }
	for _, s := range r.statefulSets {
		svc, ok := r.services[s.Spec.ServiceName]
		switch {
		case !ok:
			bad("StatefulSet %s: serviceName %q is not rendered", s.Name, s.Spec.ServiceName)
		case svc.Spec.ClusterIP != corev1.ClusterIPNone || !svc.Spec.PublishNotReadyAddresses:
			bad("StatefulSet %s: its Service %s must be headless and publish not-ready addresses", s.Name, svc.Name)
		}
		pod := s.Spec.Template.Spec
		sc := pod.SecurityContext
		if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser == 0 {
			bad("StatefulSet %s: pods must run as a fixed non-root user", s.Name)
		}
		grace := int64(30)
		if pod.TerminationGracePeriodSeconds != nil {
			grace = *pod.TerminationGracePeriodSeconds
		}
		volumes := map[string]bool{}
		for _, v := range pod.Volumes {
			volumes[v.Name] = true
			if v.ConfigMap != nil && !r.configMaps[v.ConfigMap.Name] {
				bad("StatefulSet %s: volume %s names ConfigMap %q, which is not rendered", s.Name, v.Name, v.ConfigMap.Name)
			}
		}
		for _, c := range s.Spec.VolumeClaimTemplates {
			volumes[c.Name] = true
		}
		for _, c := range pod.Containers {
			ports := map[string]bool{}
			for _, port := range c.Ports {
				ports[port.Name] = true
			}
			for what, probe := range map[string]*corev1.Probe{"readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
				if probe == nil || probe.HTTPGet == nil || !ports[probe.HTTPGet.Port.String()] {
					bad("container %s: the %s probe must be an HTTP GET on a named port of the container", c.Name, what)
				}
			}
			for _, m := range c.VolumeMounts {
				if !volumes[m.Name] {
					bad("container %s: mount %s names no volume", c.Name, m.Name)
				}
			}
			csc := c.SecurityContext
			if csc == nil || csc.ReadOnlyRootFilesystem == nil || !*csc.ReadOnlyRootFilesystem ||
				csc.AllowPrivilegeEscalation == nil || *csc.AllowPrivilegeEscalation ||
				csc.Capabilities == nil || len(csc.Capabilities.Drop) != 1 || csc.Capabilities.Drop[0] != "ALL" {
				bad("container %s: needs readOnlyRootFilesystem, no privilege escalation and all capabilities dropped", c.Name)
			}
			if c.Lifecycle != nil && c.Lifecycle.PreStop != nil && c.Lifecycle.PreStop.Sleep != nil &&
				c.Lifecycle.PreStop.Sleep.Seconds >= grace {
				bad("container %s: the preStop sleep (%d s) leaves no grace for the drain (%d s)", c.Name,
					c.Lifecycle.PreStop.Sleep.Seconds, grace)
			}
		}
	}
	return p
}

func fail(problems []string) {
	for _, p := range problems {
		fmt.Fprintln(os.Stderr, "k8scheck:", p)
	}
	os.Exit(1)
}
