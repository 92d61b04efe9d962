// Package deploy holds the checks of hotpair's deployment files that need
// heavy libraries (k8s.io/api, kustomize, compose-spec, Prometheus's PromQL
// parser, BuildKit's Dockerfile parser). It is a Go module of its own so the
// binary's go.mod stays light; scripts/test.sh runs its tests too. Every
// check runs without Docker or Kubernetes: see README.md, "What the checks
// validate".
package deploy
