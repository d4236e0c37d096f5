package maintain

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/apfproject/apf/clock"
	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/config/bootstrap"
	"github.com/apfproject/apf/internal/api/store"
)

// The producer's schedule (docs/spec/maintenance.md#schedule).
const (
	// InitialRetryPeriod separates attempts of the first pass.
	InitialRetryPeriod = time.Second
	// InitialDeadline is how long the first pass is retried at
	// InitialRetryPeriod before the failure is reported.
	InitialDeadline = 5 * time.Minute
	// Period separates the passes after the first success.
	Period = time.Minute
)

// Producer keeps the mandatory and suggested objects in the store (the
// "config producer"). Ensure makes one pass; Run repeats it for as long as
// the server lives.
type Producer struct {
	objs  Objects
	clock clock.Clock
	log   *slog.Logger
	// period separates the passes after the first success.
	period time.Duration
	// profile names the suggested objects kept (SetProfile).
	profile bootstrap.Profile

	initOnce    sync.Once
	initialized chan struct{}

	// onPass, when set, is called by Run after every pass, before the
	// wait for the next one. Tests use it to follow the schedule.
	onPass func(error)
}

// NewProducer returns a producer writing through objs. A nil clock means
// clock.Real; a nil logger discards.
func NewProducer(objs Objects, clk clock.Clock, log *slog.Logger) *Producer {
	if clk == nil {
		clk = clock.Real
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Producer{objs: objs, clock: clk, log: log, period: Period, profile: bootstrap.ProfileKubernetes, initialized: make(chan struct{})}
}

// SetProfile makes the producer keep the suggested objects of profile p
// instead of kube-apiserver's; the mandatory objects are the same in
// every profile. Suggested objects of another profile that the server
// owns (annotation "true") are removed by the next pass, as any object
// the server owns but no longer suggests. Call it before Run.
func (p *Producer) SetProfile(profile bootstrap.Profile) {
	p.profile = profile
}

// SetPeriod replaces Period, the time between passes once the first has
// succeeded, for a server that wants deleted suggested objects back
// sooner (and for tests). Call it before Run; d must be positive.
func (p *Producer) SetPeriod(d time.Duration) {
	if d > 0 {
		p.period = d
	}
}

// OnPass sets f to be called by Run after every pass with its outcome
// (nil when it succeeded), before the wait for the next; call it before
// Run. A test that changes bootstrap objects uses it to know that the pass
// Run makes right after the first has ended and cannot undo the change.
func (p *Producer) OnPass(f func(error)) { p.onPass = f }

// Initialized is closed once a pass of Run has succeeded: from then on the
// store holds every mandatory and suggested object.
func (p *Producer) Initialized() <-chan struct{} { return p.initialized }

// Run makes passes until ctx ends. The first pass is retried every
// InitialRetryPeriod until it succeeds; once it has, a pass runs at once
// and then Period after each pass ends, whatever its outcome.
//
// When the first pass still fails after InitialDeadline, Run logs the
// failure at error level and carries on with the Period schedule (the
// next attempt one Period after the failed one) instead of stopping. A
// server whose store is briefly unreachable at start-up thus repairs its
// configuration as soon as the store comes back; Initialized, which stays
// open until a pass succeeds, is what readiness should wait on.
func (p *Producer) Run(ctx context.Context) {
	t := newTimer(p.clock)
	start := p.clock.Now()
	for {
		err := p.pass(ctx)
		if err == nil {
			p.markInitialized()
			break
		}
		if ctx.Err() != nil {
			return
		}
		if p.clock.Now().Add(InitialRetryPeriod).Sub(start) > InitialDeadline {
			p.log.Error("APF bootstrap configuration could not be ensured; retrying every period",
				"deadline", InitialDeadline, "period", p.period, "err", err)
			if !sleep(ctx, t, p.period) {
				return
			}
			break
		}
		p.log.Info("APF bootstrap configuration not ensured yet; retrying", "after", InitialRetryPeriod, "err", err)
		if !sleep(ctx, t, InitialRetryPeriod) {
			return
		}
	}
	for {
		if err := p.pass(ctx); err == nil {
			p.markInitialized()
		} else if ctx.Err() == nil {
			p.log.Error("APF bootstrap configuration pass failed; retrying next period", "period", p.period, "err", err)
		}
		if !sleep(ctx, t, p.period) {
			return
		}
	}
}

func (p *Producer) pass(ctx context.Context) error {
	err := p.Ensure(ctx)
	if p.onPass != nil {
		p.onPass(err)
	}
	return err
}

func (p *Producer) markInitialized() {
	p.initOnce.Do(func() { close(p.initialized) })
}

// wanted is one bootstrap object and how the producer treats it.
type wanted struct {
	res       store.Resource
	obj       config.Object
	mandatory bool
}

// plan lists the bootstrap objects in the order of
// docs/spec/maintenance.md#one-pass: suggested levels, mandatory levels
// (catch-all, then exempt), suggested schemas, mandatory schemas (exempt,
// then catch-all). Every level comes before the schemas that reference it,
// the mandatory ones included (the suggested schema probes names the
// mandatory level exempt), so that on an empty store no schema ever
// dangles: none is reported dangling, none is left out of classification,
// and no transient Dangling condition is written.
func plan(profile bootstrap.Profile) []wanted {
	var out []wanted
	pl := func(o *flowcontrolv1.PriorityLevelConfiguration, mandatory bool) {
		out = append(out, wanted{store.ResourcePriorityLevels, config.Object{PriorityLevel: o, Version: config.V1}, mandatory})
	}
	fs := func(o *flowcontrolv1.FlowSchema, mandatory bool) {
		out = append(out, wanted{store.ResourceFlowSchemas, config.Object{FlowSchema: o, Version: config.V1}, mandatory})
	}
	for _, o := range profile.SuggestedPriorityLevels() {
		pl(o, false)
	}
	pl(bootstrap.MandatoryPriorityLevel(bootstrap.PriorityLevelCatchAll), true)
	pl(bootstrap.MandatoryPriorityLevel(bootstrap.PriorityLevelExempt), true)
	for _, o := range profile.SuggestedFlowSchemas() {
		fs(o, false)
	}
	fs(bootstrap.MandatoryFlowSchema(bootstrap.FlowSchemaExempt), true)
	fs(bootstrap.MandatoryFlowSchema(bootstrap.FlowSchemaCatchAll), true)
	return out
}

// Ensure makes one maintenance pass (docs/spec/maintenance.md#one-pass) and
// stops at the first error:
//
//   - every bootstrap object that is missing is created, suggested ones
//     included (deleting a suggested object is not a way to get rid of it);
//   - an existing one is auto-updated if it is mandatory, or if its
//     apf.kubernetes.io/autoupdate-spec annotation parses as true
//     (strconv.ParseBool), or if that annotation is missing or unparsable
//     and metadata.generation is 1 (the object was never edited);
//   - the annotation is rewritten as "true" or "false" whenever it does not
//     parse to that decision, and the spec is replaced by the bootstrap one
//     when the object is auto-updated and its spec differs; both changes go
//     in one Update, and a Conflict leaves the object to the next pass;
//   - finally FlowSchemas, then levels, that are not bootstrap objects but
//     whose annotation parses as true are deleted: such objects were put
//     there by a server whose bootstrap set included them.
func (p *Producer) Ensure(ctx context.Context) error {
	for _, w := range plan(p.profile) {
		if err := p.ensureOne(ctx, w); err != nil {
			return err
		}
	}
	keepFS := make(map[string]bool)
	for _, o := range p.profile.FlowSchemas() {
		keepFS[o.Name] = true
	}
	keepPL := make(map[string]bool)
	for _, o := range p.profile.PriorityLevels() {
		keepPL[o.Name] = true
	}
	if err := p.removeUnwanted(ctx, store.ResourceFlowSchemas, keepFS); err != nil {
		return err
	}
	return p.removeUnwanted(ctx, store.ResourcePriorityLevels, keepPL)
}

func (p *Producer) ensureOne(ctx context.Context, w wanted) error {
	kind, name := w.obj.Kind(), w.obj.Name()
	cur, err := p.objs.Get(ctx, w.res, name)
	switch {
	case err == nil:
	case apierrors.IsNotFound(err):
		_, err := p.objs.Create(ctx, w.obj)
		if err == nil {
			p.log.Info("created APF bootstrap object", "kind", kind, "name", name, "mandatory", w.mandatory)
			return nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %s %q: %w", kind, name, err)
		}
		// Another server created it between our Get and Create: judge
		// what it wrote like any existing object.
		if cur, err = p.objs.Get(ctx, w.res, name); err != nil {
			return fmt.Errorf("reading %s %q after a concurrent create: %w", kind, name, err)
		}
	default:
		return fmt.Errorf("reading %s %q: %w", kind, name, err)
	}
	if cur.Kind() != kind || cur.Name() != name {
		return fmt.Errorf("reading %s %q: the store returned %s %q", kind, name, cur.Kind(), cur.Name())
	}

	meta := objectMeta(cur)
	auto := w.mandatory
	if !auto {
		if v, ok := parseAnnotation(meta); ok {
			auto = v
		} else {
			auto = meta.Generation == 1
		}
	}
	fixAnnotation := !annotationIs(meta, auto)
	fixSpec := auto && specDiffers(cur, w.obj)
	if !fixAnnotation && !fixSpec {
		return nil
	}

	upd := cur.DeepCopy()
	if fixAnnotation {
		m := objectMeta(upd)
		if m.Annotations == nil {
			m.Annotations = make(map[string]string, 1)
		}
		m.Annotations[bootstrap.AutoUpdateAnnotation] = strconv.FormatBool(auto)
	}
	if fixSpec {
		copySpec(upd, w.obj)
	}
	if _, err := p.objs.Update(ctx, upd); err != nil {
		if apierrors.IsConflict(err) {
			p.log.Info("APF bootstrap object changed while being updated; leaving it to the next pass", "kind", kind, "name", name)
			return nil
		}
		return fmt.Errorf("updating %s %q: %w", kind, name, err)
	}
	p.log.Info("updated APF bootstrap object", "kind", kind, "name", name,
		"autoUpdate", auto, "annotation", fixAnnotation, "spec", fixSpec)
	return nil
}

// removeUnwanted deletes the objects of res that are not named in keep and
// whose annotation parses as true. The delete is conditional on the UID
// and resourceVersion that were listed, so an object edited since (its
// annotation set to false, say) is not lost: the Conflict leaves it to the
// next pass.
func (p *Producer) removeUnwanted(ctx context.Context, res store.Resource, keep map[string]bool) error {
	objs, _, err := p.objs.List(ctx, res)
	if err != nil {
		return fmt.Errorf("listing %s: %w", res, err)
	}
	for _, o := range objs {
		name := o.Name()
		meta := objectMeta(o)
		if meta == nil || keep[name] {
			continue
		}
		raw, present := meta.Annotations[bootstrap.AutoUpdateAnnotation]
		if !present {
			continue
		}
		v, err := strconv.ParseBool(raw)
		if err != nil {
			p.log.Warn("keeping object with a malformed autoupdate annotation", "resource", res, "name", name,
				"annotation", bootstrap.AutoUpdateAnnotation, "value", raw)
			continue
		}
		if !v {
			continue
		}
		pre := &metav1.Preconditions{}
		if uid := meta.UID; uid != "" {
			pre.UID = &uid
		}
		if rv := meta.ResourceVersion; rv != "" {
			pre.ResourceVersion = &rv
		}
		_, err = p.objs.Delete(ctx, res, name, pre)
		switch {
		case err == nil:
			p.log.Info("deleted APF object no longer in the bootstrap configuration", "resource", res, "name", name)
		case apierrors.IsNotFound(err):
		case apierrors.IsConflict(err):
			p.log.Info("APF object changed while being deleted; leaving it to the next pass", "resource", res, "name", name)
		default:
			return fmt.Errorf("deleting %s %q: %w", res, name, err)
		}
	}
	return nil
}

// parseAnnotation returns the value of the autoupdate annotation, and
// false when it is missing or does not parse.
func parseAnnotation(m *metav1.ObjectMeta) (value, ok bool) {
	raw, present := m.Annotations[bootstrap.AutoUpdateAnnotation]
	if !present {
		return false, false
	}
	v, err := strconv.ParseBool(raw)
	if err != nil {
		return false, false
	}
	return v, true
}

// annotationIs reports whether the annotation parses to want.
func annotationIs(m *metav1.ObjectMeta, want bool) bool {
	v, ok := parseAnnotation(m)
	return ok && v == want
}

func objectMeta(o config.Object) *metav1.ObjectMeta {
	switch {
	case o.FlowSchema != nil:
		return &o.FlowSchema.ObjectMeta
	case o.PriorityLevel != nil:
		return &o.PriorityLevel.ObjectMeta
	}
	return nil
}

// copySpec replaces the whole spec of dst by a copy of want's.
func copySpec(dst, want config.Object) {
	if dst.FlowSchema != nil {
		dst.FlowSchema.Spec = *want.FlowSchema.Spec.DeepCopy()
		return
	}
	dst.PriorityLevel.Spec = *want.PriorityLevel.Spec.DeepCopy()
}

// specDiffers compares a stored object's spec, defaulted as a read from
// the API would be, with the bootstrap spec. For the exempt level the
// values in spec.exempt belong to the administrator (validation lets them
// be tuned) and are not compared; a missing spec.exempt still differs.
func specDiffers(cur, want config.Object) bool {
	if cur.FlowSchema != nil {
		got := cur.FlowSchema.DeepCopy()
		config.DefaultFlowSchemaV1(got)
		return !apiequality.Semantic.DeepEqual(got.Spec, want.FlowSchema.Spec)
	}
	got := cur.PriorityLevel.DeepCopy()
	config.DefaultPriorityLevelV1(got)
	exp := want.PriorityLevel.Spec.DeepCopy()
	if got.Name == bootstrap.PriorityLevelExempt && exp.Exempt != nil {
		if got.Spec.Exempt == nil {
			return true
		}
		exp.Exempt = got.Spec.Exempt.DeepCopy()
	}
	return !apiequality.Semantic.DeepEqual(got.Spec, *exp)
}
