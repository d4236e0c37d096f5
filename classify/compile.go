package classify

import (
	"cmp"
	"fmt"
	"slices"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"

	"github.com/apfproject/apf/config/bootstrap"
	"github.com/apfproject/apf/shuffle"
)

// PriorityLevel is a usable priority level of a compiled configuration.
type PriorityLevel struct {
	// Name and UID identify the object; UID is "" for an imagined level.
	Name string
	UID  string
	// Index is the level's position in Matcher.PriorityLevels, so that
	// callers can keep per-level state in a slice rather than a map.
	Index int
	// Object is the configuration object (shared: do not modify).
	Object *flowcontrolv1.PriorityLevelConfiguration
	// Exempt levels dispatch at once and never queue or reject.
	Exempt bool
	// Imagined is true when no usable object of this mandatory level exists
	// and the built-in definition stands in.
	Imagined bool

	// distinguishes is true for levels that queue with more than one queue:
	// only they use the flow distinguisher and hash.
	distinguishes bool
}

// FlowSchema is a usable FlowSchema of a compiled configuration.
type FlowSchema struct {
	// Name and UID identify the object; UID is "" for an imagined schema.
	Name string
	UID  string
	// Index is the schema's position in the matching order.
	Index int
	// Object is the configuration object (shared: do not modify).
	Object *flowcontrolv1.FlowSchema
	// PriorityLevel is where the schema sends the requests it matches.
	PriorityLevel *PriorityLevel
	// Imagined is true for a built-in mandatory schema standing in for a
	// missing or dangling one.
	Imagined bool

	distinguisher distinguisherKind
	rules         []rule
}

// Problem says why an object of the configuration takes no part in
// classification.
type Problem struct {
	Kind   string // "FlowSchema" or "PriorityLevelConfiguration"
	Name   string
	Reason string
}

func (p Problem) String() string { return fmt.Sprintf("%s %q: %s", p.Kind, p.Name, p.Reason) }

// Matcher is a compiled configuration. It is immutable and safe for
// concurrent use.
type Matcher struct {
	schemas  []*FlowSchema // matching order
	levels   []*PriorityLevel
	byLevel  map[string]*PriorityLevel
	catchAll *FlowSchema
	problems []Problem
	dangling map[string]bool
	index    ruleIndex
	flows    *flowCache
	memo     *memo
}

// Compile digests a configuration. The objects are expected in defaulted
// v1 form; they are referenced, not copied, and must not be modified
// afterwards. Objects that cannot take part are reported by Problems, never
// refused: classification always has an answer.
func Compile(schemas []*flowcontrolv1.FlowSchema, levels []*flowcontrolv1.PriorityLevelConfiguration) *Matcher {
	m := &Matcher{
		byLevel:  make(map[string]*PriorityLevel, len(levels)+2),
		dangling: make(map[string]bool),
		flows:    newFlowCache(),
		memo:     newMemo(),
	}
	for _, pl := range levels {
		if pl == nil {
			continue
		}
		if _, dup := m.byLevel[pl.Name]; dup {
			m.problems = append(m.problems, Problem{"PriorityLevelConfiguration", pl.Name, "duplicate name; the first one is used"})
			continue
		}
		if err := levelProblem(pl); err != "" {
			m.problems = append(m.problems, Problem{"PriorityLevelConfiguration", pl.Name, err})
			continue
		}
		m.addLevel(pl, false)
	}
	seen := make(map[string]bool, len(schemas))
	for _, fs := range schemas {
		if fs == nil {
			continue
		}
		if seen[fs.Name] {
			m.problems = append(m.problems, Problem{"FlowSchema", fs.Name, "duplicate name; the first one is used"})
			continue
		}
		seen[fs.Name] = true
		pl := m.byLevel[fs.Spec.PriorityLevelConfiguration.Name]
		if pl == nil {
			m.dangling[fs.Name] = true
			m.problems = append(m.problems, Problem{"FlowSchema", fs.Name,
				fmt.Sprintf("dangling: priority level %q does not exist or is not usable", fs.Spec.PriorityLevelConfiguration.Name)})
			continue
		}
		m.schemas = append(m.schemas, compileSchema(fs, pl, false))
	}
	// The stand-ins for missing mandatory levels come after the schemas
	// are digested, as in the API server: a schema naming a level that
	// has no usable object dangles even when that level is imagined, and
	// the built-in mandatory schema takes the place of a dangling one.
	for _, pl := range bootstrap.MandatoryPriorityLevels() {
		if m.byLevel[pl.Name] == nil {
			pl.UID = ""
			m.addLevel(pl, true)
		}
	}
	slices.SortFunc(m.levels, func(a, b *PriorityLevel) int { return cmp.Compare(a.Name, b.Name) })
	for i, l := range m.levels {
		l.Index = i
	}
	slices.SortStableFunc(m.schemas, func(a, b *FlowSchema) int { return CompareMatchingOrder(a.Object, b.Object) })
	if m.schemaNamed(bootstrap.FlowSchemaExempt) == nil {
		fs := bootstrap.MandatoryFlowSchema(bootstrap.FlowSchemaExempt)
		fs.UID = ""
		m.schemas = slices.Insert(m.schemas, 0, compileSchema(fs, m.byLevel[fs.Spec.PriorityLevelConfiguration.Name], true))
	}
	m.catchAll = m.schemaNamed(bootstrap.FlowSchemaCatchAll)
	if m.catchAll == nil {
		fs := bootstrap.MandatoryFlowSchema(bootstrap.FlowSchemaCatchAll)
		fs.UID = ""
		m.catchAll = compileSchema(fs, m.byLevel[fs.Spec.PriorityLevelConfiguration.Name], true)
		m.schemas = append(m.schemas, m.catchAll)
	}
	for i, fs := range m.schemas {
		fs.Index = i
	}
	m.index = buildIndex(m.schemas)
	slices.SortFunc(m.problems, func(a, b Problem) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Name, b.Name))
	})
	return m
}

func (m *Matcher) addLevel(pl *flowcontrolv1.PriorityLevelConfiguration, imagined bool) {
	l := &PriorityLevel{
		Name:     pl.Name,
		UID:      string(pl.UID),
		Object:   pl,
		Exempt:   pl.Spec.Type == flowcontrolv1.PriorityLevelEnablementExempt,
		Imagined: imagined,
	}
	if lim := pl.Spec.Limited; lim != nil && lim.LimitResponse.Type == flowcontrolv1.LimitResponseTypeQueue {
		l.distinguishes = lim.LimitResponse.Queuing.Queues > 1
	}
	m.levels = append(m.levels, l)
	m.byLevel[l.Name] = l
}

// levelProblem says why a priority level cannot be used, or "" when it can.
// These are the structural checks a consumer must make even of objects that
// passed validation, since it cannot trust every writer of its store.
func levelProblem(pl *flowcontrolv1.PriorityLevelConfiguration) string {
	isExempt := pl.Spec.Type == flowcontrolv1.PriorityLevelEnablementExempt
	isLimited := pl.Spec.Type == flowcontrolv1.PriorityLevelEnablementLimited
	switch {
	case !isExempt && !isLimited:
		return fmt.Sprintf("unknown type %q", pl.Spec.Type)
	case isLimited != (pl.Spec.Limited != nil):
		return "spec.limited must be set exactly when the type is Limited"
	case isExempt != (pl.Spec.Exempt != nil):
		return "spec.exempt must be set exactly when the type is Exempt"
	case isExempt != (pl.Name == bootstrap.PriorityLevelExempt):
		return fmt.Sprintf("only the level named %q may be Exempt, and it must be", bootstrap.PriorityLevelExempt)
	case isExempt:
		return ""
	}
	lr := pl.Spec.Limited.LimitResponse
	switch lr.Type {
	case flowcontrolv1.LimitResponseTypeReject:
		if lr.Queuing != nil {
			return "a Reject level must not have queuing settings"
		}
	case flowcontrolv1.LimitResponseTypeQueue:
		if lr.Queuing == nil {
			return "a Queue level needs queuing settings"
		}
		if err := shuffle.ValidateSizes(int(lr.Queuing.Queues), int(lr.Queuing.HandSize)); err != nil {
			return fmt.Sprintf("queues and handSize are unusable: %v", err)
		}
	default:
		return fmt.Sprintf("unknown limitResponse type %q", lr.Type)
	}
	return ""
}

func (m *Matcher) schemaNamed(name string) *FlowSchema {
	for _, fs := range m.schemas {
		if fs.Name == name {
			return fs
		}
	}
	return nil
}

// FlowSchemas returns the usable schemas in matching order, imagined ones
// included. The slice is shared: do not modify it.
func (m *Matcher) FlowSchemas() []*FlowSchema { return m.schemas }

// PriorityLevels returns the usable levels sorted by name, imagined ones
// included. The slice is shared: do not modify it.
func (m *Matcher) PriorityLevels() []*PriorityLevel { return m.levels }

// PriorityLevel returns the usable level of that name, or nil.
func (m *Matcher) PriorityLevel(name string) *PriorityLevel { return m.byLevel[name] }

// Problems lists the objects that take no part in classification and why:
// broken priority levels, dangling FlowSchemas and duplicates.
func (m *Matcher) Problems() []Problem { return m.problems }

// Dangling reports whether the named FlowSchema was left out because its
// priority level does not exist or is unusable.
func (m *Matcher) Dangling(name string) bool { return m.dangling[name] }

// CompareMatchingOrder orders FlowSchemas as requests are matched against
// them: by matchingPrecedence, lowest first, then by name, byte by byte.
// Both must be defaulted.
func CompareMatchingOrder(a, b *flowcontrolv1.FlowSchema) int {
	if c := cmp.Compare(a.Spec.MatchingPrecedence, b.Spec.MatchingPrecedence); c != 0 {
		return c
	}
	return cmp.Compare(a.Name, b.Name)
}
