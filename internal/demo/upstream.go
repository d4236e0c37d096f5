package demo

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
)

// upstream is the demo's stand-in for a Kubernetes API server: pods to list
// and get, and objects to create, each answered after a jittered service
// time so that seats are held as long as a real API server would hold them.
type upstream struct {
	serviceTime time.Duration
	rv          atomic.Int64 // resourceVersion of the last write
}

func newUpstream(serviceTime time.Duration) *upstream {
	u := &upstream{serviceTime: serviceTime}
	u.rv.Store(1000)
	return u
}

// podsPerNamespace is the size of a namespace's pod list; small enough
// that every list is a one-seat request.
const podsPerNamespace = 5

// clusterListCost is how many times the mean service time a cluster-wide
// list takes.
const clusterListCost = 4

// clusterNamespaces are the namespaces a cluster-wide pod list covers.
var clusterNamespaces = []string{"default", "shop", "payments", "kube-system"}

type objectMeta struct {
	Name              string            `json:"name"`
	Namespace         string            `json:"namespace,omitempty"`
	UID               string            `json:"uid,omitempty"`
	ResourceVersion   string            `json:"resourceVersion,omitempty"`
	CreationTimestamp string            `json:"creationTimestamp,omitempty"`
	Labels            map[string]string `json:"labels,omitempty"`
}

type container struct {
	Name  string `json:"name"`
	Image string `json:"image"`
}

type pod struct {
	APIVersion string     `json:"apiVersion,omitempty"`
	Kind       string     `json:"kind,omitempty"`
	Metadata   objectMeta `json:"metadata"`
	Spec       struct {
		NodeName   string      `json:"nodeName"`
		Containers []container `json:"containers"`
	} `json:"spec"`
	Status struct {
		Phase string `json:"phase"`
		PodIP string `json:"podIP"`
	} `json:"status"`
}

type podList struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		ResourceVersion string `json:"resourceVersion"`
	} `json:"metadata"`
	Items []pod `json:"items"`
}

// status is a Kubernetes Status body, for errors.
type status struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Status     string `json:"status"`
	Message    string `json:"message"`
	Reason     string `json:"reason"`
	Code       int    `json:"code"`
}

func makePod(ns string, i int, rv string) pod {
	var p pod
	p.Metadata = objectMeta{
		Name:              fmt.Sprintf("web-%d", i),
		Namespace:         ns,
		UID:               fmt.Sprintf("00000000-0000-4000-8000-%012d", i),
		ResourceVersion:   rv,
		CreationTimestamp: "2026-01-01T00:00:00Z",
		Labels:            map[string]string{"app": "web"},
	}
	p.Spec.NodeName = fmt.Sprintf("node-%d", i%3)
	p.Spec.Containers = []container{{Name: "web", Image: "registry.example/web:1.4"}}
	p.Status.Phase = "Running"
	p.Status.PodIP = fmt.Sprintf("10.0.%d.%d", i/250, i%250+2)
	return p
}

// ServeHTTP routes the few paths the demo's clients use:
//
//	GET  /api/v1/pods                          cluster-wide pod list
//	GET  /api/v1/namespaces/NS/pods            a namespace's pod list
//	GET  /api/v1/namespaces/NS/pods/NAME       one pod
//	POST /api/v1/namespaces/NS/RESOURCE        create (echoed back, 201)
//
// and answers anything else with a 404 Status.
func (u *upstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	d := u.serviceTime
	if len(parts) == 3 {
		// A cluster-wide list reads more than a namespace's: it takes
		// longer, as it does on a real API server.
		d *= clusterListCost
	}
	if !serve(r, d) {
		return // the client has gone
	}
	rv := fmt.Sprint(u.rv.Load())
	switch {
	case r.Method == http.MethodGet && len(parts) == 3 && parts[0] == "api" && parts[1] == "v1" && parts[2] == "pods":
		l := newPodList(rv)
		for _, ns := range clusterNamespaces {
			for i := range podsPerNamespace {
				l.Items = append(l.Items, makePod(ns, i, rv))
			}
		}
		writeJSON(w, http.StatusOK, l)
	case len(parts) < 5 || parts[0] != "api" || parts[1] != "v1" || parts[2] != "namespaces":
		notFound(w, r)
	case r.Method == http.MethodGet && len(parts) == 5 && parts[4] == "pods":
		l := newPodList(rv)
		for i := range podsPerNamespace {
			l.Items = append(l.Items, makePod(parts[3], i, rv))
		}
		writeJSON(w, http.StatusOK, l)
	case r.Method == http.MethodGet && len(parts) == 6 && parts[4] == "pods":
		var i int
		if _, err := fmt.Sscanf(parts[5], "web-%d", &i); err != nil || i < 0 || i >= podsPerNamespace {
			notFound(w, r)
			return
		}
		p := makePod(parts[3], i, rv)
		p.APIVersion, p.Kind = "v1", "Pod"
		writeJSON(w, http.StatusOK, p)
	case r.Method == http.MethodPost && len(parts) == 5:
		u.create(w, r, parts[3])
	default:
		notFound(w, r)
	}
}

// serve holds the request for a jittered service time (uniform in ±1/3
// of d); false when the client went away meanwhile.
func serve(r *http.Request, d time.Duration) bool {
	if d > 0 {
		d = d*2/3 + time.Duration(rand.Int64N(int64(d)*2/3+1))
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	}
}

// create echoes a JSON object back with server-set metadata.
func (u *upstream) create(w http.ResponseWriter, r *http.Request, ns string) {
	var obj map[string]any
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&obj); err != nil {
		writeJSON(w, http.StatusBadRequest, status{APIVersion: "v1", Kind: "Status", Status: "Failure",
			Message: "the request body is not a JSON object: " + err.Error(), Reason: "BadRequest", Code: http.StatusBadRequest})
		return
	}
	meta, _ := obj["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
		obj["metadata"] = meta
	}
	rv := u.rv.Add(1)
	meta["namespace"] = ns
	meta["resourceVersion"] = fmt.Sprint(rv)
	meta["uid"] = fmt.Sprintf("00000000-0000-4000-9000-%012d", rv)
	if _, ok := meta["name"]; !ok {
		meta["name"] = fmt.Sprintf("obj-%d", rv)
	}
	writeJSON(w, http.StatusCreated, obj)
}

func newPodList(rv string) *podList {
	l := &podList{APIVersion: "v1", Kind: "PodList"}
	l.Metadata.ResourceVersion = rv
	return l
}

func notFound(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusNotFound, status{APIVersion: "v1", Kind: "Status", Status: "Failure",
		Message: fmt.Sprintf("the demo API serves no %s %s", r.Method, r.URL.Path), Reason: "NotFound", Code: http.StatusNotFound})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(b)
}
