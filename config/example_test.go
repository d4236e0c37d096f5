package config_test

import (
	"fmt"

	"github.com/apfproject/apf/config"
)

// A v1beta3 manifest with a zero share, read into the hub and validated.
func Example() {
	manifest := []byte(`
apiVersion: flowcontrol.apiserver.k8s.io/v1beta3
kind: PriorityLevelConfiguration
metadata:
  name: jail
  annotations:
    flowcontrol.k8s.io/v1beta3-preserve-zero-concurrency-shares: ""
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 0
    limitResponse:
      type: Reject
`)
	objs, err := config.Decode(manifest, "jail.yaml")
	if err != nil {
		fmt.Println(err)
		return
	}
	jail := objs[0]
	fmt.Println(jail.Source, jail.Kind(), jail.Name(), "written in", jail.Version)
	fmt.Println("shares:", *jail.PriorityLevel.Spec.Limited.NominalConcurrencyShares)
	fmt.Println("valid:", len(jail.Validate()) == 0)
	// Output:
	// jail.yaml:2 PriorityLevelConfiguration jail written in v1beta3
	// shares: 0
	// valid: true
}

// Validation errors carry Kubernetes field paths.
func ExampleObject_Validate() {
	objs, _ := config.Decode([]byte(`
apiVersion: flowcontrol.apiserver.k8s.io/v1beta2
kind: PriorityLevelConfiguration
metadata:
  name: wide
spec:
  type: Limited
  limited:
    assuredConcurrencyShares: -1
    limitResponse:
      type: Queue
      queuing:
        queues: 128
        handSize: 9
`), "wide.yaml")
	for _, err := range objs[0].Validate() {
		fmt.Println(err)
	}
	// Output:
	// spec.limited.assuredConcurrencyShares: Invalid value: -1: must be a non-negative integer
	// spec.limited.limitResponse.queuing.handSize: Invalid value: 9: required entropy bits of deckSize 128 and handSize 9 should not be greater than 60
}
