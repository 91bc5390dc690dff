package keyfile

import (
	"io/fs"
	"syscall"
)

// idOf is the identity of the file st describes: a rename over the path (a
// new inode), an edit in place (a new change time, which no one can set back,
// unlike the modification time) or a resize each give another identity.
func idOf(st fs.FileInfo) fileID {
	id := fileID{size: st.Size(), mod: st.ModTime().UnixNano()}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		id.dev, id.ino, id.change = uint64(sys.Dev), sys.Ino, sys.Ctimespec.Nano()
	}
	return id
}
