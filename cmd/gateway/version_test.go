package main

import (
	"regexp"
	"testing"

	"github.com/matryer/is"
)

// semver is the grammar of semver.org 2.0.0 (core, pre-release, build metadata).
var semver = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$`)

func TestVersionIsSemanticAndNamesTheRevision(t *testing.T) {
	rev := "24737be1f0a2c3d4e5f60718293a4b5c6d7e8f90"
	for _, c := range []struct {
		name   string
		linked string
		bi     buildFacts
		want   string
	}{
		{"link-time value wins", "1.2.3", buildFacts{module: "v9.9.9", revision: rev}, "1.2.3"},
		{"go install of a tag", "", buildFacts{module: "v0.10.0"}, "0.10.0"},
		{"go install of a pre-release tag", "", buildFacts{module: "v0.10.0-rc.1"}, "0.10.0-rc.1"},
		{"pseudo-version is a commit, not a release", "", buildFacts{module: "v0.0.0-20261201114200-24737be1f0a2", revision: rev}, baseVersion + "-dev+24737be1f0a2"},
		{"local checkout", "", buildFacts{module: "(devel)", revision: rev}, baseVersion + "-dev+24737be1f0a2"},
		{"local checkout with changes", "", buildFacts{module: "(devel)", revision: rev, modified: true}, baseVersion + "-dev+24737be1f0a2.dirty"},
		{"no build info at all", "", buildFacts{}, baseVersion + "-dev"},
	} {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			got := resolveVersion(c.linked, c.bi)
			is.Equal(got, c.want)
			is.True(semver.MatchString(got)) // every form is a semantic version
		})
	}
	is.New(t).True(semver.MatchString(version)) // and so is this binary's
}
