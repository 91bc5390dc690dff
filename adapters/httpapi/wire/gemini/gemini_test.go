package gemini_test

import (
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/httpapi/wire/gemini"
)

func TestDecodeKeepsUnknownPartAndToolMembersByName(t *testing.T) {
	is := is.New(t)
	r, err := gemini.Decode([]byte(`{"contents":[{"role":"user","parts":[{"text":"hi"},{"inlineData":{"mimeType":"image/png","data":"AA=="}}]}],
		"tools":[{"googleSearch":{}},{"functionDeclarations":[{"name":"f","parametersJsonSchema":{"type":"object"}}]}]}`))
	is.NoErr(err)
	is.Equal(len(r.Contents.Items), 1)
	parts := r.Contents.Items[0].V.Parts.Items
	is.Equal(parts[0].V.Text.V, "hi")
	is.Equal(parts[1].V.Unknown.Names(), []string{"inlineData"})
	tools := r.Tools.Entries()
	is.Equal(tools[0].V.Unknown.Names(), []string{"googleSearch"})
	is.Equal(tools[1].V.FunctionDeclarations.Items[0].V.Name.V, "f")
}

func TestDecodeRefusesARepeatedMemberWithItsPath(t *testing.T) {
	is := is.New(t)
	_, err := gemini.Decode([]byte(`{"contents":[{"role":"user","role":"model"}]}`))
	path, ok := gemini.DuplicateName(err)
	is.True(ok)
	is.Equal(path, []string{"contents", "0", "role"})
	_, err = gemini.Decode([]byte(`[1]`))
	is.True(err != nil)
}
