package main

import (
	"fmt"
	"io"
	"regexp"
	"runtime/debug"
)

// baseVersion is the release this tree is on its way to. It moves with
// CHANGELOG.md: when a release is cut, its heading and this constant change
// together, and the commit is tagged v<baseVersion>. The seeded probe reports
// are written by an unstamped build of this version: after a bump, set the
// "version" of cmd/gateway/testdata/probe/good.json to <baseVersion>-dev and
// run PMGATE_UPDATE_TESTDATA=1 go test -run TestTheGoodSeed ./cmd/gateway.
const baseVersion = "0.10.0"

// releaseVersion can be set at link time
// (go build -ldflags "-X main.releaseVersion=1.2.3"); it wins over everything
// the build info says.
var releaseVersion string

// version is the semantic version this binary reports (gateway version, the
// probe report, /admin and /metrics).
var version = resolveVersion(releaseVersion, readBuildInfo())

// releaseTag is a module version of a tagged release: vMAJOR.MINOR.PATCH with
// an optional pre-release, but not a Go pseudo-version
// (v0.0.0-20261201114200-0123456789ab), which names a commit, not a release.
var releaseTag = regexp.MustCompile(`^v(\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?)$`)

var pseudoSuffix = regexp.MustCompile(`\d{14}-[0-9a-f]{12}$`)

// resolveVersion picks, in order: the link-time value; the module version of
// a tagged release (what `go install …/cmd/gateway@v1.2.3` records); otherwise
// a development version of baseVersion with the VCS revision as build
// metadata, e.g. 0.10.0-dev+24737be1f0a2 (or +24737be1f0a2.dirty).
func resolveVersion(linked string, bi buildFacts) string {
	if linked != "" {
		return linked
	}
	if m := releaseTag.FindStringSubmatch(bi.module); m != nil && !pseudoSuffix.MatchString(m[1]) {
		return m[1]
	}
	v := baseVersion + "-dev"
	if bi.revision != "" {
		rev := bi.revision
		if len(rev) > 12 {
			rev = rev[:12]
		}
		v += "+" + rev
		if bi.modified {
			v += ".dirty"
		}
	}
	return v
}

// buildFacts is what the Go toolchain recorded about this build.
type buildFacts struct {
	module, goVersion, goos, goarch, revision string
	modified                                  bool
}

func readBuildInfo() buildFacts {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return buildFacts{}
	}
	f := buildFacts{module: bi.Main.Version, goVersion: bi.GoVersion}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			f.revision = s.Value
		case "vcs.modified":
			f.modified = s.Value == "true"
		case "GOOS":
			f.goos = s.Value
		case "GOARCH":
			f.goarch = s.Value
		}
	}
	return f
}

// buildInfo returns the VCS revision this binary was built from and whether
// the tree had uncommitted changes.
func buildInfo() (revision string, modified bool) {
	f := readBuildInfo()
	return f.revision, f.modified
}

func runVersion(stdout io.Writer) error {
	f := readBuildInfo()
	fmt.Fprintf(stdout, "gateway %s\n", version)
	if f.goVersion != "" {
		fmt.Fprintf(stdout, "go %s\n", f.goVersion)
	}
	if f.revision != "" {
		fmt.Fprintf(stdout, "vcs.revision %s\nvcs.modified %t\n", f.revision, f.modified)
	}
	if f.goos != "" {
		fmt.Fprintf(stdout, "GOOS %s\nGOARCH %s\n", f.goos, f.goarch)
	}
	return nil
}
