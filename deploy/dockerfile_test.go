package deploy

import (
	"debug/buildinfo"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
	"github.com/moby/buildkit/frontend/dockerfile/shell"
)

// The Dockerfile, checked without a Docker engine: BuildKit's own parser
// reads it; the build stage's Go is the one go.mod asks for; its go build
// line, run as written (with the build arguments substituted), gives a
// static binary of the same module, packages and dependencies as `go build`
// ./cmd/hotpair; the final stage runs that binary as a non-root user.
// Not checked here (no engine): that the base images exist and pull, COPY
// and .dockerignore semantics, and the image's file ownership at run time.
func TestDockerfileBuildsTheBinary(t *testing.T) {
	f, err := os.Open(filepath.Join(repo, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ast, err := parser.Parse(f)
	if err != nil {
		t.Fatalf("Dockerfile: %v", err)
	}
	stages, _, err := instructions.Parse(ast.AST, nil)
	if err != nil {
		t.Fatalf("Dockerfile: %v", err)
	}
	if len(stages) != 2 {
		t.Fatalf("%d stages, want 2 (build, runtime)", len(stages))
	}
	build, final := stages[0], stages[1]

	gomod, _ := os.ReadFile(filepath.Join(repo, "go.mod"))
	var goVersion string
	for _, l := range strings.Split(string(gomod), "\n") {
		if v, ok := strings.CutPrefix(l, "go "); ok {
			goVersion = strings.TrimSpace(v)
		}
	}
	img, ok := strings.CutPrefix(build.BaseName, "golang:")
	if !ok || !strings.HasPrefix(img, goVersion) && !versionAtLeast(img, goVersion) {
		t.Errorf("build stage FROM %s: want golang at least go.mod's go %s", build.BaseName, goVersion)
	}

	args := map[string]string{}
	var goBuild []string
	var env []string
	for _, cmd := range build.Commands {
		switch c := cmd.(type) {
		case *instructions.ArgCommand:
			for _, a := range c.Args {
				if a.Value != nil {
					args[a.Key] = *a.Value
				}
			}
		case *instructions.RunCommand:
			line := strings.Join(c.CmdLine, " ")
			if !strings.Contains(line, "go build") {
				continue
			}
			lex := shell.NewLex('\\')
			lex.RawQuotes = false
			words, err := lex.ProcessWords(line, shell.EnvsFromSlice(envOf(args)))
			if err != nil {
				t.Fatal(err)
			}
			for len(words) > 0 && strings.Contains(words[0], "=") {
				env = append(env, words[0])
				words = words[1:]
			}
			goBuild = words
		}
	}
	if len(goBuild) < 2 || goBuild[0] != "go" || goBuild[1] != "build" || !slices.Contains(env, "CGO_ENABLED=0") {
		t.Fatalf("no CGO_ENABLED=0 go build line in the build stage: %v %v", env, goBuild)
	}
	out := slices.Index(goBuild, "-o")
	if out < 0 || goBuild[len(goBuild)-1] != "./cmd/hotpair" {
		t.Fatalf("go build line %v: want -o and ./cmd/hotpair", goBuild)
	}
	var copied bool
	for _, cmd := range final.Commands {
		if c, ok := cmd.(*instructions.CopyCommand); ok && c.From == build.Name && slices.Contains(c.SourcePaths, goBuild[out+1]) {
			copied = true
		}
	}
	if !copied {
		t.Errorf("the final stage does not copy %s from the build stage", goBuild[out+1])
	}
	var user string
	var entry []string
	for _, cmd := range final.Commands {
		switch c := cmd.(type) {
		case *instructions.UserCommand:
			user = c.User
		case *instructions.EntrypointCommand:
			entry = c.CmdLine
		}
	}
	if user == "" || user == "root" || strings.HasPrefix(user, "0") {
		t.Errorf("the final stage runs as %q, want a non-root user", user)
	}
	if len(entry) != 1 || !strings.HasSuffix(entry[0], "/hotpair") {
		t.Errorf("ENTRYPOINT %v, want the hotpair binary", entry)
	}

	// Run the Dockerfile's go build line as written, and a plain go build.
	dir := t.TempDir()
	docker := filepath.Join(dir, "docker-hotpair")
	line := slices.Clone(goBuild)
	line[out+1] = docker
	cmd := exec.Command(line[0], line[1:]...)
	cmd.Dir, cmd.Env = repo, append(os.Environ(), env...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the Dockerfile's %s: %v\n%s", strings.Join(line, " "), err, b)
	}
	plain := hotpairBin(t)
	if os.Getenv("HOTPAIR_BIN") != "" {
		plain = filepath.Join(dir, "plain-hotpair")
		gb := exec.Command("go", "build", "-o", plain, "./cmd/hotpair")
		gb.Dir = repo
		if b, err := gb.CombinedOutput(); err != nil {
			t.Fatalf("go build: %v\n%s", err, b)
		}
	}
	d, err := buildinfo.ReadFile(docker)
	if err != nil {
		t.Fatal(err)
	}
	p, err := buildinfo.ReadFile(plain)
	if err != nil {
		t.Fatal(err)
	}
	if d.Path != p.Path || d.Main.Path != p.Main.Path || d.GoVersion != p.GoVersion || !sameDeps(d, p) {
		t.Errorf("the Dockerfile builds %s %s (%d deps), go build %s %s (%d deps)", d.Path, d.GoVersion, len(d.Deps), p.Path, p.GoVersion, len(p.Deps))
	}
	if static, why := isStatic(t, docker); !static {
		t.Errorf("the image's binary is not static: %s", why)
	}
	v, err := exec.Command(docker, "version").CombinedOutput()
	if err != nil || strings.TrimSpace(string(v)) != args["VERSION"] && !strings.Contains(string(v), args["VERSION"]) {
		t.Errorf("the image's binary says %q for version, want the VERSION build argument %q (%v)", v, args["VERSION"], err)
	}
}

func envOf(m map[string]string) []string {
	var out []string
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	return out
}

func sameDeps(a, b *buildinfo.BuildInfo) bool {
	key := func(bi *buildinfo.BuildInfo) []string {
		var out []string
		for _, d := range bi.Deps {
			out = append(out, d.Path+"@"+d.Version)
		}
		slices.Sort(out)
		return out
	}
	return slices.Equal(key(a), key(b))
}

// isStatic: no program interpreter and no shared libraries needed.
func isStatic(t *testing.T, path string) (bool, string) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return false, "it has a program interpreter"
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		return false, "it needs " + strings.Join(libs, ", ")
	}
	return true, ""
}

// versionAtLeast compares "1.26.8-bookworm" with "1.26.8".
func versionAtLeast(image, want string) bool {
	v, _, _ := strings.Cut(image, "-")
	return v >= want
}
