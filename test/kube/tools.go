//go:build tools

// The kube-apiserver and kubectl the harness runs are built from this
// module (make kube-bins); importing their main packages under a build tag
// nobody sets keeps k8s.io/kubernetes and its exact dependency versions in
// go.mod and go.sum without compiling them into the tests.
package kube

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
