package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/hotpair/hotpair/internal/buildinfo"
	"github.com/hotpair/hotpair/internal/zkserver"
)

func runVersion(_ context.Context, a *app, args []string) int {
	fs := newFlags(a, "version", "version")
	if code, done := parseNoArgs(a, fs, args); done {
		return code
	}
	fmt.Fprintln(a.stdout, buildinfo.String())
	return 0
}

func runZookeeper(ctx context.Context, a *app, args []string) int {
	fs := newFlags(a, "zookeeper", "zookeeper [--dir DIR] [--port N] [--addr-file PATH]")
	dir := fs.String("dir", "", "data directory (default: a temporary directory, removed at exit)")
	port := fs.Int("port", 0, "port on 127.0.0.1 (default: a free port)")
	addrFile := fs.String("addr-file", "", "write {\"zk\": \"host:port\"} to this file once the server answers")
	if code, done := parseNoArgs(a, fs, args); done {
		return code
	}
	s, err := zkserver.Start(ctx, zkserver.Options{Dir: *dir, Port: *port})
	if err != nil {
		fmt.Fprintln(a.stderr, "hotpair zookeeper:", err)
		return 1
	}
	defer s.Stop()
	fmt.Fprintln(a.stdout, "zookeeper listening on", s.Addr())
	if *addrFile != "" {
		b, _ := json.Marshal(map[string]string{"zk": s.Addr()})
		if err := os.WriteFile(*addrFile, b, 0o644); err != nil {
			fmt.Fprintln(a.stderr, "hotpair zookeeper:", err)
			return 1
		}
	}
	<-ctx.Done()
	return 0
}
