// Package buildinfo names the running build, as health samples report it.
package buildinfo

import "runtime/debug"

// Version is set at link time:
//
//	go build -ldflags "-X github.com/hotpair/hotpair/internal/buildinfo.Version=v1.2.3" ./cmd/hotpair
var Version = ""

// String returns Version, else the module version, else "dev".
func String() string {
	if Version != "" {
		return Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}
