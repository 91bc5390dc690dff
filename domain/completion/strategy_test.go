package completion_test

import (
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/domain/completion"
	"github.com/pmgate/pmgate/domain/errs"
)

func TestRuleForChoosesTheRuleOfTheStrategy(t *testing.T) {
	is := is.New(t)
	for _, c := range []struct {
		web        bool
		configured completion.Rule
		want       completion.Rule
	}{
		{false, "", completion.RuleLegacyDone},
		{true, "", completion.DefaultWebRule},
		{true, completion.RuleExplicitOnly, completion.RuleExplicitOnly},
		{true, completion.RuleUsageAfterOutput, completion.RuleUsageAfterOutput},
	} {
		got, err := completion.RuleFor(c.web, c.configured)
		is.NoErr(err)         // a strategy and a rule it takes
		is.Equal(got, c.want) // choose the documented rule
	}
	for _, c := range []struct {
		web        bool
		configured completion.Rule
	}{
		{false, completion.RuleExplicitOnly},
		{false, completion.RuleLegacyDone}, // access_token takes no configured rule, not even its own
		{true, completion.RuleLegacyDone},  // legacy_done is not a web rule
		{true, "EXPLICIT_ONLY"},
		{true, "usage_after_output"},
	} {
		got, err := completion.RuleFor(c.web, c.configured)
		is.True(errs.Has(err, errs.ConfigInvalid)) // refused
		is.Equal(got, completion.Rule(""))         // with no rule to use
	}
}
