package emulator

import "regexp"

// lastSubmatch is the submatches of re's last match in s, nil without one.
// The newest user turn can hold more than one prompt: a client whose prompt
// failed merges it with the user's next prompt into one message (Claude Code
// does), so the turn carries the failed prompt's directives and then the new
// ones. The newest directive of each kind wins, as the newest instruction
// does for a model; a prompt that must not repeat an earlier failure says so
// with "#scenario=usage_last" (the normal turn).
func lastSubmatch(re *regexp.Regexp, s string) []string {
	all := re.FindAllStringSubmatch(s, -1)
	if len(all) == 0 {
		return nil
	}
	return all[len(all)-1]
}
