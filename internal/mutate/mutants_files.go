package main

// The defects of issue 35's items 10, 11 and 13 and the reload and
// verification tests it asked for; each is killed by its named test.
func init() {
	mutants = append(mutants,
		mutant{"an unclean path under /admin refused without the browser headers", "adapters/httpapi/server.go",
			"} else if !cleanPath(r.URL.Path) && strings.HasPrefix(path.Clean(r.URL.Path), pathAdmin) {",
			"} else if false {", "./adapters/httpapi/", "EveryAdminAnswer"},
	)
}
