package pallas

import "strings"

// HelperSource is the source of the named draft helpers and those they call
// (for tests that run the helpers themselves).
func HelperSource(names ...string) string { return usedHelpers(strings.Join(names, " ")) }
