//go:build !linux && !darwin

package keyfile

import "io/fs"

// idOf is the identity of the file st describes. Here only its size and
// modification time are known: a request with an unknown key may then miss a
// same-size change with a preserved time until the next poll, which reads the
// content whatever the identity says.
func idOf(st fs.FileInfo) fileID {
	return fileID{size: st.Size(), mod: st.ModTime().UnixNano()}
}
