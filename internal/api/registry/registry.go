package registry

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/internal/api/store"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/validate/content"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Options adjusts a Registry. The zero value is ready to use.
type Options struct {
	// Clock gives the time stamped as metadata.creationTimestamp; nil
	// means time.Now.
	Clock func() time.Time
	// NewUID gives metadata.uid of created objects; nil means a random
	// RFC 4122 version 4 UUID.
	NewUID func() string
}

// Registry serves typed FlowSchemas and PriorityLevelConfigurations over a
// store.Store. It is safe for concurrent use; all state lives in the store.
type Registry struct {
	s      store.Store
	clock  func() time.Time
	newUID func() string
}

// New returns a Registry over s.
func New(s store.Store, opts Options) *Registry {
	r := &Registry{s: s, clock: opts.Clock, newUID: opts.NewUID}
	if r.clock == nil {
		r.clock = time.Now
	}
	if r.newUID == nil {
		r.newUID = randomUUID
	}
	return r
}

// Store returns the store the registry works on.
func (r *Registry) Store() store.Store { return r.s }

// maxRetries bounds how often an unconditional write is retried after it
// lost a race with another writer.
const maxRetries = 16

// optimisticLockMsg is the API server's wording for a stale resourceVersion.
const optimisticLockMsg = "the object has been modified; please apply your changes to the latest version and try again"

// GroupResource returns the API group-resource of res, as used in errors.
func GroupResource(res store.Resource) schema.GroupResource {
	return schema.GroupResource{Group: config.Group, Resource: string(res)}
}

// KindOf returns the kind stored under res, or "" for an unknown resource.
func KindOf(res store.Resource) string {
	switch res {
	case store.ResourceFlowSchemas:
		return config.KindFlowSchema
	case store.ResourcePriorityLevels:
		return config.KindPriorityLevel
	}
	return ""
}

// ResourceOf returns the resource an object is stored under, or "" when
// the Object holds neither kind.
func ResourceOf(o config.Object) store.Resource {
	switch {
	case o.FlowSchema != nil && o.PriorityLevel == nil:
		return store.ResourceFlowSchemas
	case o.PriorityLevel != nil && o.FlowSchema == nil:
		return store.ResourcePriorityLevels
	}
	return ""
}

func checkResource(res store.Resource) error {
	if KindOf(res) == "" {
		return apierrors.NewBadRequest(fmt.Sprintf("unknown resource %q", res))
	}
	return nil
}

// objectMeta returns the metadata of the object o holds.
func objectMeta(o config.Object) *metav1.ObjectMeta {
	if o.FlowSchema != nil {
		return &o.FlowSchema.ObjectMeta
	}
	return &o.PriorityLevel.ObjectMeta
}

// specEqual reports whether two objects of the same kind have the same
// spec, after defaulting (objects reach the registry defaulted).
func specEqual(a, b config.Object) bool {
	if a.FlowSchema != nil {
		return apiequality.Semantic.DeepEqual(a.FlowSchema.Spec, b.FlowSchema.Spec)
	}
	return apiequality.Semantic.DeepEqual(a.PriorityLevel.Spec, b.PriorityLevel.Spec)
}

// sameObject reports whether two objects of the same kind are stored
// alike, i.e. whether writing one over the other would change nothing.
func sameObject(a, b config.Object) bool {
	da, errA := encode(a)
	db, errB := encode(b)
	return errA == nil && errB == nil && bytes.Equal(da, db)
}

// encode writes the stored form: v1 in kube-apiserver's own storage
// encoding (protobuf in its "k8s\x00" envelope, see storage.go), without
// resourceVersion.
func encode(o config.Object) ([]byte, error) {
	o = o.DeepCopy()
	objectMeta(o).ResourceVersion = ""
	return encodeStored(hubObject(o))
}

// decode reads a stored item back, with resourceVersion set from its
// ModRevision.
func decode(res store.Resource, it store.Item) (config.Object, error) {
	o := config.Object{Version: config.V1, Source: config.Source{Item: -1}}
	switch res {
	case store.ResourceFlowSchemas:
		fs := &flowcontrolv1.FlowSchema{}
		if err := decodeStored(it.Data, fs); err != nil {
			return config.Object{}, fmt.Errorf("stored %s %q does not decode: %w", res, it.Name, err)
		}
		config.DefaultFlowSchemaV1(fs)
		o.FlowSchema = fs
	case store.ResourcePriorityLevels:
		pl := &flowcontrolv1.PriorityLevelConfiguration{}
		if err := decodeStored(it.Data, pl); err != nil {
			return config.Object{}, fmt.Errorf("stored %s %q does not decode: %w", res, it.Name, err)
		}
		config.DefaultPriorityLevelV1(pl)
		o.PriorityLevel = pl
	default:
		return config.Object{}, fmt.Errorf("unknown resource %q", res)
	}
	m := objectMeta(o)
	m.ResourceVersion = strconv.FormatInt(it.ModRevision, 10)
	if m.Name == "" {
		m.Name = it.Name
	}
	return o, nil
}

// storeError maps a store error to the API error a client sees.
func storeError(err error, res store.Resource, name string) error {
	gr := GroupResource(res)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, store.ErrNotFound):
		return apierrors.NewNotFound(gr, name)
	case errors.Is(err, store.ErrExists):
		return apierrors.NewAlreadyExists(gr, name)
	case errors.Is(err, store.ErrConflict):
		return apierrors.NewConflict(gr, name, errors.New(optimisticLockMsg))
	case errors.Is(err, store.ErrTooLarge):
		// The API server passes etcd's refusal on as it comes.
		return plainError(errors.New("etcdserver: request is too large"))
	case errors.Is(err, store.ErrCompacted):
		return apierrors.NewResourceExpired("too old resource version: " + err.Error())
	case errors.Is(err, store.ErrUnavailable):
		// Checked before the context errors: an unreachable store is the
		// server's condition, not the client's timeout, and clients retry
		// a 503.
		return apierrors.NewServiceUnavailable("the storage is unavailable, try again later: " + err.Error())
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return apierrors.NewTimeoutError(err.Error(), 0)
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return err
	}
	return apierrors.NewInternalError(err)
}

// invalid is the 422 Invalid for an object that fails validation, worded
// as the API server words it: a cause per distinct error (the API server's
// validation of these kinds ends with a filter that drops an error
// repeating one before it word for word, as an update's checks of the
// metadata do), and a message that lists the same. Validation stops after
// config.MaxErrors errors; when it did, or more distinct errors are found
// than that, the causes are the first MaxErrors distinct ones and a last
// one saying that the list is truncated (the API server's words where it
// truncates a list of errors), and the message lists the same, so that
// both start exactly as the API server's would.
//
// The message is built in one pass: the API server builds it by adding
// each error to the string so far, which costs time and garbage in the
// square of its length.
func invalid(o config.Object, errs field.ErrorList) error {
	return invalidKind(o.Kind(), o.Name(), errs, config.Truncated(errs))
}

// invalidKind is invalid for the object of kind named name; stopped says
// that validation stopped before it found every error.
func invalidKind(kind, name string, errs field.ErrorList, stopped bool) error {
	gk := schema.GroupKind{Group: config.Group, Kind: kind}
	var msg strings.Builder
	fmt.Fprintf(&msg, "%s %q is invalid", gk.String(), name)
	seen := make(map[string]bool, min(len(errs), config.MaxErrors+1))
	var distinct []string
	causes := make([]metav1.StatusCause, 0, min(len(errs), config.MaxErrors)+1)
	truncated := stopped
	for _, e := range errs {
		text := e.Error()
		if seen[text] {
			continue
		}
		if len(distinct) == config.MaxErrors {
			truncated = true
			break
		}
		seen[text] = true
		distinct = append(distinct, text)
		causes = append(causes, metav1.StatusCause{Type: metav1.CauseType(e.Type), Message: e.ErrorBody(), Field: e.Field})
	}
	if truncated {
		causes = append(causes, metav1.StatusCause{Message: tooManyErrors})
		distinct = append(distinct, tooManyErrors)
	}
	switch len(distinct) {
	case 0:
	case 1:
		msg.WriteString(": ")
		msg.WriteString(distinct[0])
	default:
		msg.WriteString(": [")
		for i, text := range distinct {
			if i > 0 {
				msg.WriteString(", ")
			}
			msg.WriteString(text)
		}
		msg.WriteString("]")
	}
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusUnprocessableEntity,
		Reason:  metav1.StatusReasonInvalid,
		Message: msg.String(),
		Details: &metav1.StatusDetails{Group: gk.Group, Kind: gk.Kind, Name: name, Causes: causes},
	}}
}

// tooManyErrors ends a list of errors that validation stopped.
const tooManyErrors = "too many errors, the list is truncated"

// parseRV reads the resourceVersion a client's write of the object of
// kind named name is conditional on, as the API server's storage reads
// it: a decimal uint64, 0 (or none) for an unconditional write. One
// beyond every revision (2^63 and over, which etcd never reaches) is a
// revision no object has, so the write meets a conflict.
//
// One that is no uint64 at all is a 422 Invalid whose cause is
// metadata.resourceVersion, with the parser's words, as the API server's
// versioner words it where it reads a resourceVersion of a request. (Its
// update path passes the parse error on as it comes, a 500 with the bare
// text; apf does not answer bad input with a server error.)
func parseRV(kind, name, rv string) (int64, error) {
	if rv == "" {
		return 0, nil
	}
	n, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		return 0, invalidKind(kind, name, field.ErrorList{field.Invalid(field.NewPath("metadata", "resourceVersion"), rv, err.Error())}, false)
	}
	if n > math.MaxInt64 {
		return noRevision, nil
	}
	return int64(n), nil
}

// noRevision is a resourceVersion that no stored object has.
const noRevision = -1

// plainError is what the API server answers for an error that carries no
// API status: 500, no reason, the error's own text.
func plainError(err error) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusInternalServerError,
		Reason:  metav1.StatusReasonUnknown,
		Message: err.Error(),
	}}
}

// Get returns the named object.
func (r *Registry) Get(ctx context.Context, res store.Resource, name string) (config.Object, error) {
	if err := checkResource(res); err != nil {
		return config.Object{}, err
	}
	if name == "" {
		return config.Object{}, apierrors.NewBadRequest("name is required")
	}
	it, err := r.s.Get(ctx, res, name)
	if err != nil {
		return config.Object{}, storeError(err, res, name)
	}
	o, err := decode(res, it)
	if err != nil {
		return config.Object{}, apierrors.NewInternalError(err)
	}
	return o, nil
}

// List returns every object of res sorted by name, and the resourceVersion
// of the list, from which a watch misses nothing.
func (r *Registry) List(ctx context.Context, res store.Resource) ([]config.Object, string, error) {
	if err := checkResource(res); err != nil {
		return nil, "", err
	}
	items, rev, err := r.s.List(ctx, res)
	if err != nil {
		return nil, "", storeError(err, res, "")
	}
	objs := make([]config.Object, 0, len(items))
	for _, it := range items {
		o, err := decode(res, it)
		if err != nil {
			return nil, "", apierrors.NewInternalError(err)
		}
		objs = append(objs, o)
	}
	return objs, strconv.FormatInt(rev, 10), nil
}

// Write says who makes a write, and whether it is only tried.
type Write struct {
	// Manager is the field manager whose entry in metadata.managedFields
	// records the write: the request's fieldManager option, or the name
	// its client's User-Agent starts with.
	Manager string
	// DryRun does everything but store: the answer is the object that
	// would have been stored, or the error the write would have met.
	DryRun bool
	// Patched says that the object of an update is a patch's result. An
	// update sent whole (PUT) that names a uid makes it a precondition on
	// the stored object's (409 Conflict when it differs); a patch's
	// result that names another uid than the stored object's changes an
	// immutable field (422 Invalid), as in the API server.
	Patched bool
}

// Create stores a new object and returns it as stored.
func (r *Registry) Create(ctx context.Context, obj config.Object, w Write) (config.Object, error) {
	res := ResourceOf(obj)
	if res == "" {
		return config.Object{}, apierrors.NewBadRequest("the object must be exactly one FlowSchema or PriorityLevelConfiguration")
	}
	sentRV := objectMeta(obj).ResourceVersion
	if earlyCheck(obj, w.Manager) {
		if err := validated(initCreate(obj, "", time.Time{})); err != nil {
			return config.Object{}, err
		}
	}
	if err := stillWanted(ctx); err != nil {
		return config.Object{}, err
	}
	empty, err := newHub(obj.Kind())
	if err != nil {
		return config.Object{}, err
	}
	sent, err := recordUpdate(empty, obj, w.Manager, false)
	if err != nil {
		return config.Object{}, err
	}
	if err := stillWanted(ctx); err != nil {
		return config.Object{}, err
	}
	o, err := r.prepareCreate(sent)
	if err != nil {
		return config.Object{}, err
	}
	if w.DryRun {
		// The API server's dry run answers with the object as it would
		// be stored, the resourceVersion as sent.
		o, err = r.store(ctx, o, true)
		if err == nil {
			objectMeta(o).ResourceVersion = sentRV
		}
		return o, err
	}
	if err := checkCreateRV(sentRV); err != nil {
		return config.Object{}, err
	}
	return r.store(ctx, o, false)
}

// checkCreateRV refuses a create that names a resourceVersion, as the
// API server's storage does just before it stores: one that is a revision
// (a uint64 other than 0). Any other string is ignored there, and here.
// The API server passes its refusal on as a 500 with its bare words; apf
// answers them with a 400, the client's request being at fault.
func checkCreateRV(rv string) error {
	if n, err := strconv.ParseUint(rv, 10, 64); err == nil && n != 0 {
		return apierrors.NewBadRequest("resourceVersion should not be set on objects to be created")
	}
	return nil
}

// earlyCheck says whether a write of sent by manager may be validated
// before the field manager records it, with the answer validation after
// it would give. The field manager changes nothing of the object but
// metadata.managedFields, and it walks the whole object several times, in
// two versions: an object of a million empty rules costs it hundreds of
// megabytes, and an invalid object refused before costs none of that.
// What it records cannot change the answer when the client sent no
// managed fields and the manager's name is valid: the entries are then the
// stored object's, checked when they were stored, and the manager's own.
// Otherwise validation waits for the managed fields, as in the API server.
func earlyCheck(sent config.Object, manager string) bool {
	return len(objectMeta(sent).ManagedFields) == 0 &&
		len(metavalidation.ValidateFieldManager(manager, field.NewPath("manager"))) == 0
}

// stillWanted refuses to go on with a write whose client has gone away
// (or whose deadline has passed): the steps of a write over a large
// object each cost time, and the answer would reach nobody.
func stillWanted(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return storeError(err, "", "")
	}
	return nil
}

// store writes a prepared new object (or, in a dry run, checks that its
// name is free).
func (r *Registry) store(ctx context.Context, o config.Object, dryRun bool) (config.Object, error) {
	res := ResourceOf(o)
	if dryRun {
		_, err := r.s.Get(ctx, res, o.Name())
		switch {
		case err == nil:
			return config.Object{}, apierrors.NewAlreadyExists(GroupResource(res), o.Name())
		case !errors.Is(err, store.ErrNotFound):
			return config.Object{}, storeError(err, res, o.Name())
		}
		return o, nil
	}
	data, err := encode(o)
	if err != nil {
		return config.Object{}, apierrors.NewInternalError(err)
	}
	rev, err := r.s.Create(ctx, res, o.Name(), data)
	if err != nil {
		return config.Object{}, storeError(err, res, o.Name())
	}
	objectMeta(o).ResourceVersion = strconv.FormatInt(rev, 10)
	return o, nil
}

// prepareCreate fills in the server-owned metadata of a new object, whose
// managed fields are already recorded, and validates it.
func (r *Registry) prepareCreate(obj config.Object) (config.Object, error) {
	o := initCreate(obj, types.UID(r.newUID()), r.clock())
	if err := validated(o); err != nil {
		return config.Object{}, err
	}
	return o, nil
}

// validated is the 422 for an object that fails validation, or nil.
func validated(o config.Object) error {
	if errs := o.Validate(); len(errs) > 0 {
		return invalid(o, errs)
	}
	return nil
}

// initCreate returns a copy of obj with the server-owned metadata of a new
// object, uid and creation time as given, and its defaults.
func initCreate(obj config.Object, uid types.UID, now time.Time) config.Object {
	o := obj.DeepCopy()
	m := objectMeta(o)
	if m.Name == "" && m.GenerateName != "" {
		m.Name = m.GenerateName + randomSuffix()
	}
	m.Namespace = "" // cluster-scoped: a namespace sent is dropped, as by the API server
	m.UID = uid
	m.CreationTimestamp = metav1.NewTime(now.UTC().Truncate(time.Second))
	m.Generation = 1
	m.ResourceVersion = ""
	m.DeletionTimestamp = nil
	m.DeletionGracePeriodSeconds = nil
	if o.FlowSchema != nil {
		o.FlowSchema.Status = flowcontrolv1.FlowSchemaStatus{}
		config.DefaultFlowSchemaV1(o.FlowSchema)
	} else {
		o.PriorityLevel.Status = flowcontrolv1.PriorityLevelConfigurationStatus{}
		config.DefaultPriorityLevelV1(o.PriorityLevel)
	}
	return o
}

// Update replaces an object's metadata and spec; its status is kept from
// storage. With metadata.resourceVersion set the write is conditional on
// it (409 Conflict when stale); without, it is unconditional. An update of
// a missing object is a 404.
func (r *Registry) Update(ctx context.Context, obj config.Object, w Write) (config.Object, error) {
	return r.update(ctx, obj, false, w)
}

// UpdateStatus replaces an object's status; everything else is kept from
// storage.
func (r *Registry) UpdateStatus(ctx context.Context, obj config.Object, w Write) (config.Object, error) {
	return r.update(ctx, obj, true, w)
}

func (r *Registry) update(ctx context.Context, obj config.Object, status bool, w Write) (config.Object, error) {
	res := ResourceOf(obj)
	if res == "" {
		return config.Object{}, apierrors.NewBadRequest("the object must be exactly one FlowSchema or PriorityLevelConfiguration")
	}
	name := obj.Name()
	if name == "" {
		return config.Object{}, invalid(obj, field.ErrorList{field.Required(field.NewPath("metadata", "name"), "name or generateName is required")})
	}
	// The API server checks, in this order: that the object exists, the
	// uid precondition of an update sent whole, that the resourceVersion
	// parses, that it is the stored one, then the object.
	want, rvErr := parseRV(obj.Kind(), name, objectMeta(obj).ResourceVersion)
	pre := func(old config.Object) error {
		if uid := objectMeta(obj).UID; !w.Patched && uid != "" && uid != objectMeta(old).UID {
			return apierrors.NewConflict(GroupResource(res), name, fmt.Errorf(
				"StorageError: invalid object, Code: 4, Key: %s, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: %v, UID in object meta: %v",
				store.DefaultPrefix+string(res)+"/"+name, uid, objectMeta(old).UID))
		}
		return rvErr
	}
	return r.rewrite(ctx, res, name, want, w.DryRun, pre, func(old config.Object) (config.Object, error) {
		if earlyCheck(obj, w.Manager) {
			if _, err := prepareUpdate(obj, old, status); err != nil {
				return config.Object{}, err
			}
		}
		if err := stillWanted(ctx); err != nil {
			return config.Object{}, err
		}
		sent, err := recordUpdate(old, obj, w.Manager, status)
		if err != nil {
			return config.Object{}, err
		}
		if err := stillWanted(ctx); err != nil {
			return config.Object{}, err
		}
		return prepareUpdate(sent, old, status)
	})
}

// rewrite reads the named object, makes its new state with next, and
// stores that unless it changes nothing. pre, when not nil, checks the
// stored object first. want, when not 0, is the resourceVersion the read
// must find (409 Conflict otherwise); without it, a write that loses a
// race with another writer starts again from a fresh read.
func (r *Registry) rewrite(ctx context.Context, res store.Resource, name string, want int64, dryRun bool, pre func(old config.Object) error, next func(old config.Object) (config.Object, error)) (config.Object, error) {
	for attempt := 0; ; attempt++ {
		it, err := r.s.Get(ctx, res, name)
		if err != nil {
			return config.Object{}, storeError(err, res, name)
		}
		old, err := decode(res, it)
		if err != nil {
			return config.Object{}, apierrors.NewInternalError(err)
		}
		if pre != nil {
			if err := pre(old); err != nil {
				return config.Object{}, err
			}
		}
		if want != 0 && it.ModRevision != want {
			return config.Object{}, apierrors.NewConflict(GroupResource(res), name, errors.New(optimisticLockMsg))
		}
		o, err := next(old)
		if err != nil {
			return config.Object{}, err
		}
		if dryRun {
			objectMeta(o).ResourceVersion = objectMeta(old).ResourceVersion
			return o, nil
		}
		if sameObject(o, old) {
			// Nothing changes: like the API server, do not write, and
			// answer with the stored object and its resourceVersion.
			return old, nil
		}
		data, err := encode(o)
		if err != nil {
			return config.Object{}, apierrors.NewInternalError(err)
		}
		rev, err := r.s.Update(ctx, res, name, data, it.ModRevision)
		if errors.Is(err, store.ErrConflict) && want == 0 && attempt < maxRetries {
			continue // lost a race; an unconditional write tries again
		}
		if err != nil {
			return config.Object{}, storeError(err, res, name)
		}
		objectMeta(o).ResourceVersion = strconv.FormatInt(rev, 10)
		return o, nil
	}
}

// prepareUpdate builds the object to store from the one sent, whose
// managed fields are already recorded, and the one stored, and validates
// it, as the API server does.
//
// Of the metadata sent, the server keeps the stored generation (bumped
// when the spec changes), uid when none is sent, creation time, deletion
// time and grace period when the stored object has them; it drops the
// namespace of these cluster-wide kinds. The rest (generateName among
// it) is written as sent, and a uid, deletion time or grace period that
// differs from the stored object's is refused as a change of an immutable
// field. A status update keeps all metadata but the managed fields.
func prepareUpdate(sent, old config.Object, status bool) (config.Object, error) {
	var o config.Object
	if status {
		o = old.DeepCopy()
		if o.FlowSchema != nil {
			o.FlowSchema.Status = *sent.FlowSchema.Status.DeepCopy()
		} else {
			o.PriorityLevel.Status = *sent.PriorityLevel.Status.DeepCopy()
		}
		objectMeta(o).ManagedFields = objectMeta(sent).ManagedFields
		o.Version = sent.Version
	} else {
		o = sent.DeepCopy()
		m, om := objectMeta(o), objectMeta(old)
		if m.UID == "" {
			m.UID = om.UID
		}
		m.CreationTimestamp = om.CreationTimestamp
		if om.DeletionTimestamp != nil {
			m.DeletionTimestamp = om.DeletionTimestamp
		}
		if om.DeletionGracePeriodSeconds != nil && m.DeletionGracePeriodSeconds == nil {
			m.DeletionGracePeriodSeconds = om.DeletionGracePeriodSeconds
		}
		m.Namespace = ""
		if o.FlowSchema != nil {
			config.DefaultFlowSchemaV1(o.FlowSchema)
			o.FlowSchema.Status = *old.FlowSchema.Status.DeepCopy()
		} else {
			config.DefaultPriorityLevelV1(o.PriorityLevel)
			o.PriorityLevel.Status = *old.PriorityLevel.Status.DeepCopy()
		}
		m.Generation = om.Generation
		if !specEqual(o, old) {
			m.Generation++
		}
	}
	if errs, stopped := validateUpdate(o, old); len(errs) > 0 {
		return config.Object{}, invalidKind(o.Kind(), o.Name(), errs, stopped)
	}
	objectMeta(o).ResourceVersion = ""
	return o, nil
}

// validateUpdate validates an update of old to o as the API server does:
// the metadata every object has (the names as path segments), then what
// an update may not change, then the kind's own validation, which checks
// the metadata again; invalidKind drops the errors found twice. stopped
// says that the kind's validation stopped before it found every error.
func validateUpdate(o, old config.Object) (errs field.ErrorList, stopped bool) {
	m := objectMeta(o)
	// The API server validates the object with the resourceVersion it
	// writes over, filled in for an unconditional update.
	m.ResourceVersion = objectMeta(old).ResourceVersion
	path := field.NewPath("metadata")
	errs = apivalidation.ValidateObjectMetaAccessor(m, false, pathSegment, path)
	errs = append(errs, apivalidation.ValidateObjectMetaAccessorUpdate(m, objectMeta(old), path)...)
	own := o.Validate()
	return append(errs, own...), config.Truncated(own)
}

// pathSegment checks that a name, or a prefix of one, can be a segment
// of a URL path.
func pathSegment(name string, prefix bool) []string {
	if prefix {
		return content.IsPathSegmentPrefix(name)
	}
	return content.IsPathSegmentName(name)
}

// Delete removes the named object and returns it as it was, with the
// resourceVersion of the deletion. Preconditions on uid and
// resourceVersion, when given, must hold (409 Conflict otherwise).
func (r *Registry) Delete(ctx context.Context, res store.Resource, name string, pre *metav1.Preconditions) (config.Object, error) {
	return r.delete(ctx, res, name, pre, false)
}

// DryRunDelete checks what Delete checks and returns the object Delete
// would remove, without removing it.
func (r *Registry) DryRunDelete(ctx context.Context, res store.Resource, name string, pre *metav1.Preconditions) (config.Object, error) {
	return r.delete(ctx, res, name, pre, true)
}

func (r *Registry) delete(ctx context.Context, res store.Resource, name string, pre *metav1.Preconditions, dryRun bool) (config.Object, error) {
	if err := checkResource(res); err != nil {
		return config.Object{}, err
	}
	if name == "" {
		return config.Object{}, apierrors.NewBadRequest("name is required")
	}
	for attempt := 0; ; attempt++ {
		it, err := r.s.Get(ctx, res, name)
		if err != nil {
			return config.Object{}, storeError(err, res, name)
		}
		old, err := decode(res, it)
		if err != nil {
			return config.Object{}, apierrors.NewInternalError(err)
		}
		m := objectMeta(old)
		if pre != nil && pre.UID != nil && *pre.UID != m.UID {
			return config.Object{}, preconditionFailed(res, name, fmt.Sprintf("the UID in the precondition (%s) does not match the UID in record (%s). The object might have been deleted and then recreated", *pre.UID, m.UID))
		}
		if pre != nil && pre.ResourceVersion != nil && *pre.ResourceVersion != m.ResourceVersion {
			return config.Object{}, preconditionFailed(res, name, fmt.Sprintf("the ResourceVersion in the precondition (%s) does not match the ResourceVersion in record (%s). The object might have been modified", *pre.ResourceVersion, m.ResourceVersion))
		}
		if dryRun {
			return old, nil
		}
		gone, err := r.s.Delete(ctx, res, name, it.ModRevision)
		if errors.Is(err, store.ErrConflict) && attempt < maxRetries {
			continue // changed since the read: check the preconditions again
		}
		if err != nil {
			return config.Object{}, storeError(err, res, name)
		}
		out, err := decode(res, gone)
		if err != nil {
			return config.Object{}, apierrors.NewInternalError(err)
		}
		return out, nil
	}
}

// preconditionFailed is the 409 for a delete whose preconditions do not
// hold, worded as the API server words it: it names the object by kind,
// not by resource.
func preconditionFailed(res store.Resource, name, detail string) error {
	return apierrors.NewConflict(schema.GroupResource{Group: config.Group, Resource: KindOf(res)}, name, errors.New(detail))
}

// randomUUID returns an RFC 4122 version 4 UUID.
func randomUUID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		// crypto/rand does not fail on supported platforms; a time-based
		// value still keeps UIDs distinct if it ever does.
		now := time.Now().UnixNano()
		for i := range b {
			b[i] = byte(now >> (8 * (i % 8)))
		}
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// randomSuffix returns the five characters appended to generateName, from
// the same alphabet as the API server's (no vowels, no look-alikes).
func randomSuffix() string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	var b [5]byte
	_, _ = rand.Read(b[:])
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b[:])
}
