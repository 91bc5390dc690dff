package completion_test

import (
	"slices"
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

func TestRulesForListsEachStrategysRules(t *testing.T) {
	is := is.New(t)
	is.Equal(completion.RulesFor(false), []completion.Rule{completion.RuleLegacyDone})
	is.Equal(completion.RulesFor(true), []completion.Rule{completion.RuleExplicitOnly, completion.RuleUsageAfterOutput})
	for _, web := range []bool{false, true} {
		r, err := completion.RuleFor(web, "")
		is.NoErr(err)
		is.True(slices.Contains(completion.RulesFor(web), r)) // the default rule is one of the strategy's
	}
}
