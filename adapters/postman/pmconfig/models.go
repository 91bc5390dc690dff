package pmconfig

import (
	"regexp"
	"slices"
	"strings"
)

// parseModels maps every public model: POSTMAN_MODEL_MAP, or the single-model
// form POSTMAN_WEB_SESSION_SELECTED_MODEL (+ _OBSERVED_MODELS).
func (c *Config) parseModels(getenv func(string) string, public []string) error {
	mapRaw, selected, observed := getenv(EnvModelMap), getenv(EnvSelectedModel), getenv(EnvObservedModels)
	switch {
	case mapRaw != "" && (selected != "" || observed != ""):
		name := envName(EnvSelectedModel)
		if selected == "" {
			name = EnvObservedModels
		}
		return refuse(name, "must not be set together with POSTMAN_MODEL_MAP; use one form")
	case mapRaw != "":
		return c.parseModelMap(mapRaw, public)
	case selected != "":
		return c.parseSelectedModel(public, selected, observed)
	case observed != "":
		return refuse(EnvObservedModels, "requires POSTMAN_WEB_SESSION_SELECTED_MODEL")
	default:
		return refuse(EnvModelMap, "required (or POSTMAN_WEB_SESSION_SELECTED_MODEL when PROVIDER_MODELS has exactly one id)")
	}
}

var upstreamEnumRE = regexp.MustCompile(`^[A-Z0-9_]{1,64}$`)

// enumHint explains a model written in the wrong case or as the label the
// model picker shows (GPT-5.5 for GPT_55): a fixed text, never the value.
func enumHint(v string) hintText {
	label := strings.Map(func(r rune) rune {
		switch r {
		case '-', ' ', '.':
			return '_'
		}
		return r
	}, strings.ToUpper(v))
	if !upstreamEnumRE.MatchString(label) {
		return ""
	}
	return ": the upstream enum is upper case with '_' (GPT_55, CLAUDE_45_SONNET_BEDROCK), " +
		"not the label the model picker shows (GPT-5.5); docs/CONNECT.md's table lists them"
}

// hintText is a fixed explanation appended to a refusal; safe to log.
type hintText string

// SafeValue marks the hint as safe for logs.
func (hintText) SafeValue() {}

func (c *Config) parseModelMap(raw string, public []string) error {
	byPublic := map[string]ModelMapping{}
	for i, entry := range strings.Split(raw, ",") {
		n := redactSafeInt(i + 1)
		entry = strings.TrimSpace(entry)
		if entry == "" {
			return refuse(EnvModelMap, "entry %d is empty", n)
		}
		id, rest, ok := strings.Cut(entry, "=")
		if !ok {
			return refuse(EnvModelMap, "entry %d must be public=UPSTREAM_ENUM[|observed label|...]", n)
		}
		id = strings.TrimSpace(id)
		if !slices.Contains(public, id) {
			return refuse(EnvModelMap, "entry %d names a model that PROVIDER_MODELS does not list", n)
		}
		if _, dup := byPublic[id]; dup {
			return refuse(EnvModelMap, "entry %d maps a model that an earlier entry already maps", n)
		}
		parts := strings.Split(rest, "|")
		upstream := strings.TrimSpace(parts[0])
		if !upstreamEnumRE.MatchString(upstream) {
			return refuse(EnvModelMap, "entry %d: the upstream model must match ^[A-Z0-9_]{1,64}$%s", n, enumHint(upstream))
		}
		labels := make([]string, 0, len(parts)-1)
		for j, l := range parts[1:] {
			l = strings.TrimSpace(l)
			if !visibleASCII(l, 1, MaxLabelBytes) {
				return refuse(EnvModelMap, "entry %d: observed label %d must be 1-128 bytes of visible ASCII", n, redactSafeInt(j+1))
			}
			labels = append(labels, l)
		}
		m, ok := mapping(id, upstream, labels)
		if !ok {
			return refuse(EnvModelMap, "entry %d has more than 32 observed labels", n)
		}
		byPublic[id] = m
	}
	for _, p := range public {
		m, ok := byPublic[p]
		if !ok {
			return refuse(EnvModelMap, "no entry for public model %q", p)
		}
		c.Models = append(c.Models, m)
	}
	return nil
}

func (c *Config) parseSelectedModel(public []string, selected, observed string) error {
	if len(public) != 1 {
		return refuse(EnvSelectedModel, "needs PROVIDER_MODELS to list exactly one id; use POSTMAN_MODEL_MAP")
	}
	if !upstreamEnumRE.MatchString(selected) {
		return refuse(EnvSelectedModel, "must match ^[A-Z0-9_]{1,64}$%s", enumHint(selected))
	}
	var labels []string
	if observed != "" {
		for j, l := range strings.Split(observed, ",") {
			l = strings.TrimSpace(l)
			if !visibleASCII(l, 1, MaxLabelBytes) {
				return refuse(EnvObservedModels, "item %d must be 1-128 bytes of visible ASCII", redactSafeInt(j+1))
			}
			labels = append(labels, l)
		}
	}
	m, ok := mapping(public[0], selected, labels)
	if !ok {
		return refuse(EnvObservedModels, "must list at most 32 labels")
	}
	c.Models = []ModelMapping{m}
	return nil
}

// mapping builds a ModelMapping whose Observed starts with upstream and holds
// every label once; ok is false when there are too many labels.
func mapping(public, upstream string, labels []string) (m ModelMapping, ok bool) {
	obs := []string{upstream}
	for _, l := range labels {
		if !slices.Contains(obs, l) {
			obs = append(obs, l)
		}
	}
	if len(obs)-1 > MaxLabelsPerModel {
		return ModelMapping{}, false
	}
	return ModelMapping{Public: public, Upstream: upstream, Observed: obs}, true
}

// Model returns the mapping of a public model id. The returned Observed slice
// is a copy.
func (c Config) Model(public string) (ModelMapping, bool) {
	for _, m := range c.Models {
		if m.Public == public {
			m.Observed = slices.Clone(m.Observed)
			return m, true
		}
	}
	return ModelMapping{}, false
}
