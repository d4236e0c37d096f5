package apfhttp

// List response bodies for the tests and benchmarks of the list scanner
// and of learning.

import (
	"bytes"
	"fmt"
	"strings"
)

// podList is a pod list of n items of exactly itemSize bytes each
// (itemSize ≥ 120), with meta the members of its metadata object.
func podList(n, itemSize int, meta string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"kind":"PodList","apiVersion":"v1","metadata":{%s},"items":[`, meta)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		head := fmt.Sprintf(`{"metadata":{"name":"pod-%06d","namespace":"default","labels":{"app":"x\"y"}},"spec":{"nodeName":"n1","pad":"`, i)
		tail := `"}}`
		b.WriteString(head)
		b.WriteString(strings.Repeat("p", itemSize-len(head)-len(tail)))
		b.WriteString(tail)
	}
	b.WriteString("]}\n")
	return b.Bytes()
}

// realisticPod is a pod as an API server encodes it: many short keys and
// values, a few escapes, nested objects and arrays.
const realisticPod = `{"metadata":{"name":"web-7c9f8d6b5-%05d","generateName":"web-7c9f8d6b5-","namespace":"default","uid":"0b7e3c7a-5a0e-4f43-9d1b-5d8c2f9a%04d","resourceVersion":"123456%d","creationTimestamp":"2026-01-02T03:04:05Z","labels":{"app":"web","pod-template-hash":"7c9f8d6b5","tier":"frontend"},"annotations":{"kubectl.kubernetes.io/restartedAt":"2026-01-02T03:00:00Z","note":"say \"hi\" \\ \u00e9"},"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"web-7c9f8d6b5","uid":"9a8b7c6d-1234-5678-9abc-def012345678","controller":true,"blockOwnerDeletion":true}],"managedFields":[{"manager":"kube-controller-manager","operation":"Update","apiVersion":"v1","time":"2026-01-02T03:04:05Z","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:generateName":{},"f:labels":{".":{},"f:app":{},"f:pod-template-hash":{}},"f:ownerReferences":{".":{},"k:{\"uid\":\"9a8b7c6d-1234-5678-9abc-def012345678\"}":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{".":{},"f:image":{},"f:imagePullPolicy":{},"f:name":{},"f:ports":{".":{},"k:{\"containerPort\":8080,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{},"f:protocol":{}}},"f:resources":{".":{},"f:limits":{".":{},"f:cpu":{},"f:memory":{}},"f:requests":{".":{},"f:cpu":{},"f:memory":{}}}}}}}}]},"spec":{"volumes":[{"name":"kube-api-access-abcde","projected":{"sources":[{"serviceAccountToken":{"expirationSeconds":3607,"path":"token"}},{"configMap":{"name":"kube-root-ca.crt","items":[{"key":"ca.crt","path":"ca.crt"}]}}],"defaultMode":420}}],"containers":[{"name":"web","image":"registry.example.com/web:1.2.3","ports":[{"containerPort":8080,"protocol":"TCP"}],"resources":{"limits":{"cpu":"500m","memory":"256Mi"},"requests":{"cpu":"100m","memory":"128Mi"}},"volumeMounts":[{"name":"kube-api-access-abcde","readOnly":true,"mountPath":"/var/run/secrets/kubernetes.io/serviceaccount"}],"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","imagePullPolicy":"IfNotPresent"}],"restartPolicy":"Always","terminationGracePeriodSeconds":30,"dnsPolicy":"ClusterFirst","serviceAccountName":"default","nodeName":"node-%03d","securityContext":{},"schedulerName":"default-scheduler","tolerations":[{"key":"node.kubernetes.io/not-ready","operator":"Exists","effect":"NoExecute","tolerationSeconds":300},{"key":"node.kubernetes.io/unreachable","operator":"Exists","effect":"NoExecute","tolerationSeconds":300}],"priority":0,"enableServiceLinks":true,"preemptionPolicy":"PreemptLowerPriority"},"status":{"phase":"Running","conditions":[{"type":"Initialized","status":"True","lastProbeTime":null,"lastTransitionTime":"2026-01-02T03:04:05Z"},{"type":"Ready","status":"True","lastProbeTime":null,"lastTransitionTime":"2026-01-02T03:04:09Z"}],"hostIP":"10.0.0.12","podIP":"10.244.1.%d","podIPs":[{"ip":"10.244.1.7"}],"startTime":"2026-01-02T03:04:05Z","containerStatuses":[{"name":"web","state":{"running":{"startedAt":"2026-01-02T03:04:08Z"}},"lastState":{},"ready":true,"restartCount":0,"image":"registry.example.com/web:1.2.3","imageID":"registry.example.com/web@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef","containerID":"containerd://0123456789abcdef","started":true}],"qosClass":"Burstable"}}`

// realisticPodList is a pod list of at least size bytes.
func realisticPodList(size int) (doc []byte, items int) {
	var b bytes.Buffer
	b.WriteString(`{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"1234567"},"items":[`)
	for b.Len() < size {
		if items > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, realisticPod, items, items, items, items%1000, items%250)
		items++
	}
	b.WriteString("]}")
	return b.Bytes(), items
}
