package emulator

import (
	"regexp"
	"strings"
	"sync"
)

// onceDirective marks a user message whose directives apply the first time
// the emulator sees that message only. A client that failed a turn re-sends
// the failed prompt with its next one (opencode keeps the prompt and drops
// the failed answer), and a client that retries re-sends it alone: with
// "#once" the fault of "#scenario=… #once" happens once, as a fault of the
// service does, and the next turn's own directives apply.
const onceDirective = "#once"

// onceTurns remembers the "#once" messages that have applied, by their text.
type onceTurns struct {
	mu   sync.Mutex
	seen map[string]bool
}

// turnBlockHeaderRE matches the header of a block of the newest turn (a user,
// system or developer message of a rendered transcript).
var turnBlockHeaderRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?:^|\n\n)\[(?:User|System|Developer)(?: name=[^\]\n]*)?\]\n`)
})

// drop returns turn (newestUserTurn's result) without the messages marked
// "#once" that an earlier request already carried, and records the ones it
// keeps. A turn that is one message as it is (not rendered into blocks) is
// one message.
func (o *onceTurns) drop(turn string) string {
	if !strings.Contains(turn, onceDirective) {
		return turn
	}
	locs := turnBlockHeaderRE().FindAllStringIndex(turn, -1)
	type block struct{ start, body, end int }
	var blocks []block
	if len(locs) == 0 || locs[0][0] != 0 {
		end := len(turn)
		if len(locs) > 0 {
			end = locs[0][0]
		}
		blocks = append(blocks, block{0, 0, end})
	}
	for i, l := range locs {
		end := len(turn)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		blocks = append(blocks, block{l[0], l[1], end})
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.seen == nil {
		o.seen = map[string]bool{}
	}
	var kept strings.Builder
	for _, b := range blocks {
		body := strings.TrimSpace(turn[b.body:b.end])
		if strings.Contains(body, onceDirective) {
			if o.seen[body] {
				continue
			}
			o.seen[body] = true
		}
		kept.WriteString(turn[b.start:b.end])
	}
	return kept.String()
}
