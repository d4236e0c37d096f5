// Package deploy holds no code: it is the home of the tests of what this
// directory and the repository's Containerfile describe, the container
// image and the Kubernetes manifests (a kustomize base, overlays and
// components; deploy/README.md explains them).
//
// The image tests (image_test.go) inspect the image `make image` built:
// `make image-test` runs them with the image's name, its OCI archive and the
// buildah command of the Makefile's store in the environment; without them
// TestImage is skipped, and with them a missing buildah is a failure.
//
// The manifest tests (manifests_test.go) render every variant with
// kubectl's built-in kustomize (internal/testing/testkubectl finds
// kubectl), decode each object strictly into the k8s.io/api types, and
// check the references between them, the container arguments against apf
// serve's own flag set (internal/server), and the security settings a
// restricted namespace demands.
//
// Nothing may import this package; it depends on internal/server for the
// flag set, on config for the file configuration's manifests, and on the
// Kubernetes API types.
package deploy
