package main

// The key file's defects of the third hardening round (docs/KEYS.md): each
// is a way the set of keys in force drifts from the file.
func init() {
	// The poll reads the content on every look now: there is no start-up
	// stat left for its first look to trust, so the mutant of that defect
	// has no line to plant. Its cases are covered by "the key-file poll
	// trusts size and modification time" below.
	for i, m := range mutants {
		if m.name == "the key-file watcher's first look trusts the start-up stat" {
			mutants = append(mutants[:i], mutants[i+1:]...)
			break
		}
	}
	mutants = append(mutants,
		mutant{"the content an unknown key loaded is not recorded as in force", "adapters/keyfile/watch.go",
			"\tw.last = v.sum\n\tif err != nil {", "\tif cause != CauseUnknownKey {\n\t\tw.last = v.sum\n\t}\n\tif err != nil {",
			"./adapters/keyfile/", "Revocation"},
		mutant{"the unknown-key check loads the key file on its own", "cmd/gateway/serve.go",
			"keys.SetRefresh(keyWatch.Refresh)", "keys.SetRefresh(keyWatcher(cfg, keys, log).Refresh)",
			"./cmd/gateway/", "TestAKeyRevokedRightAfterItsFirstUse"},
		mutant{"the key file is polled every 2 s", "cmd/gateway/keys.go",
			"const keysPollInterval = 500 * time.Millisecond", "const keysPollInterval = 2 * time.Second",
			"./cmd/gateway/", "TestAKeyRevokedRightAfterItsFirstUse"},
		mutant{"the key file's identity is its size and modification time", "adapters/keyfile/fileid_linux.go",
			"\t\tid.dev, id.ino, id.change = uint64(sys.Dev), uint64(sys.Ino), sys.Ctim.Nano()", "\t\t_ = sys",
			"./adapters/keyfile/", "SameSize"},
		mutant{"the key-file poll trusts size and modification time", "adapters/keyfile/watch.go",
			"\t\tw.Look(cause)\n", "\t\tif st, err := os.Stat(w.path); cause == CausePoll && err == nil && st.Size() == w.seen.size && st.ModTime().UnixNano() == w.seen.mod {\n\t\t\tcontinue\n\t\t}\n\t\tw.Look(cause)\n",
			"./adapters/keyfile/", "SameSize"},
		mutant{"an edit goes on after its lock file was removed", "adapters/keyfile/keyfile.go",
			"if !sameLock(lock, path+\".lock\") {", "if false && !sameLock(lock, path+\".lock\") {",
			"./adapters/keyfile/", ""},
		mutant{"a refused key file's revocations compare only the slot id", "domain/keyring/keyring.go",
			"return ok && d == hex.EncodeToString(digest[:])", "_ = d\n\t\treturn ok",
			"./adapters/keyfile/", ""},
		mutant{"a raised slot limit starts a fresh limiter", "adapters/httpapi/keyring.go",
			"\t\t\tif l == nil {\n\t\t\t\tl = &limiter{}", "\t\t\tif l == nil || s.MaxConcurrent > l.max {\n\t\t\t\tl = &limiter{}",
			"./adapters/httpapi/", "Limit|InFlight"},
		mutant{"a raised slot limit starts a fresh limiter (end to end)", "adapters/httpapi/keyring.go",
			"\t\t\tif l == nil {\n\t\t\t\tl = &limiter{}", "\t\t\tif l == nil || s.MaxConcurrent > l.max {\n\t\t\t\tl = &limiter{}",
			"./cmd/gateway/", "TestARaisedSlotLimitCountsTheRequestAlreadyRunning"},
	)
}
