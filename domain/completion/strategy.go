package completion

import "github.com/pmgate/pmgate/domain/errs"

// RuleFor is the one choice of the rule that judges a stream from its
// transport strategy: an access_token stream is judged by RuleLegacyDone and
// takes no configured rule; a web_session stream by the configured web rule,
// DefaultWebRule when none is configured (""). Anything else is a
// config_invalid error. The gateway's upstream client, the probe's report and
// verify all ask this function (through pmconfig.Config.Rule).
func RuleFor(webSession bool, configured Rule) (Rule, error) {
	switch {
	case !webSession && configured == "":
		return RuleLegacyDone, nil
	case !webSession:
		return "", errs.Newf(errs.ConfigInvalid, "an access_token stream takes no configured completion rule")
	case configured == "":
		return DefaultWebRule, nil
	}
	r, err := ParseRule(string(configured))
	if err != nil || !r.Web() {
		return "", errs.Newf(errs.ConfigInvalid, "unknown web-session completion rule %q", string(configured))
	}
	return r, nil
}

// RulesFor lists every rule a stream of the strategy may be judged by, in
// declaration order: the two web rules for web_session, RuleLegacyDone for
// access_token. The upstream client's stream summary feeds the same events
// to each, to report which of them the stream would satisfy.
func RulesFor(webSession bool) []Rule {
	var out []Rule
	for _, r := range rules {
		if r.Web() == webSession {
			out = append(out, r)
		}
	}
	return out
}
