package specgen_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/app/specgen"
)

func TestCheckFindsStaleAndMissingFiles(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	is.NoErr(specgen.Write(dir))
	stale, err := specgen.Check(dir)
	is.NoErr(err)
	is.Equal(len(stale), 0) // freshly written files are current
	is.NoErr(os.WriteFile(filepath.Join(dir, "correlation.md"), []byte("edited"), 0o644))
	is.NoErr(os.Remove(filepath.Join(dir, "correlation.dot")))
	stale, err = specgen.Check(dir)
	is.NoErr(err)
	is.Equal(stale, []string{"correlation.dot", "correlation.md"}) // an edit and a deletion are both stale
}

func TestTheCommittedSpecIsCurrent(t *testing.T) {
	is := is.New(t)
	stale, err := specgen.Check("../../spec")
	is.NoErr(err)
	is.Equal(len(stale), 0) // run `make spec` after changing a machine
}
