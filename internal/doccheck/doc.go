// Package doccheck holds the tests that keep the repository's documentation
// true: every relative link of README.md and docs/*.md resolves, and
// docs/CONFIGURATION.md lists exactly the settings the code reads. It has no
// production code.
package doccheck
