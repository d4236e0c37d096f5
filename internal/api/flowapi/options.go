package flowapi

import (
	"net/http"
	"strings"
	"unicode"
	"unicode/utf8"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metascheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	listvalidation "k8s.io/apimachinery/pkg/apis/meta/internalversion/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Query parameters are read with apimachinery's parameter codec and
// checked with its option validation, as the API server's handlers do: a
// value that does not decode (a limit that is not a number, a selector
// that does not parse) is a 400 carrying the decoder's message; options
// that decode but break a rule (a field manager over 128 bytes, a
// resourceVersionMatch without a resourceVersion) are a 422 Invalid of
// the options kind in meta.k8s.io, whose causes name the parameters.

// watchListEnabled is the state of the API server's WatchList feature,
// on by default since 1.34: it decides how a watch's options are
// defaulted and which combinations of them are refused.
const watchListEnabled = true

// decodeQuery reads the query into a meta.k8s.io options object.
func decodeQuery(r *http.Request, into runtime.Object) error {
	if err := metascheme.ParameterCodec.DecodeParameters(r.URL.Query(), metav1.SchemeGroupVersion, into); err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	return nil
}

// invalidOptions is the 422 for options of kind that break a rule.
func invalidOptions(kind string, errs field.ErrorList) error {
	return apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: kind}, "", errs)
}

// validationMode maps a validated fieldValidation value to the mode.
func validationMode(v string) fieldValidation {
	switch v {
	case metav1.FieldValidationStrict:
		return validationStrict
	case metav1.FieldValidationIgnore:
		return validationIgnore
	}
	return validationWarn
}

// createOptions reads and checks the options of a create.
func createOptions(r *http.Request) (writeOptions, error) {
	var o metav1.CreateOptions
	if err := decodeQuery(r, &o); err != nil {
		return writeOptions{}, err
	}
	if errs := metavalidation.ValidateCreateOptions(&o); len(errs) > 0 {
		return writeOptions{}, invalidOptions("CreateOptions", errs)
	}
	return writeOptions{dry: len(o.DryRun) > 0, mode: validationMode(o.FieldValidation), manager: fieldManager(o.FieldManager, r)}, nil
}

// updateOptions reads and checks the options of an update.
func updateOptions(r *http.Request) (writeOptions, error) {
	var o metav1.UpdateOptions
	if err := decodeQuery(r, &o); err != nil {
		return writeOptions{}, err
	}
	if errs := metavalidation.ValidateUpdateOptions(&o); len(errs) > 0 {
		return writeOptions{}, invalidOptions("UpdateOptions", errs)
	}
	return writeOptions{dry: len(o.DryRun) > 0, mode: validationMode(o.FieldValidation), manager: fieldManager(o.FieldManager, r)}, nil
}

// patchOptions reads and checks the options of a patch of media type mt:
// force is only for server-side apply, which needs a fieldManager.
func patchOptions(r *http.Request, mt string) (writeOptions, error) {
	var o metav1.PatchOptions
	if err := decodeQuery(r, &o); err != nil {
		return writeOptions{}, err
	}
	if errs := metavalidation.ValidatePatchOptions(&o, types.PatchType(mt)); len(errs) > 0 {
		return writeOptions{}, invalidOptions("PatchOptions", errs)
	}
	return writeOptions{
		dry: len(o.DryRun) > 0, mode: validationMode(o.FieldValidation),
		manager: fieldManager(o.FieldManager, r), force: o.Force != nil && *o.Force,
	}, nil
}

// fieldManager names the manager a write is recorded under: the
// fieldManager option when given, otherwise the API server's rule, the
// client's User-Agent up to its first "/", its printable characters only,
// cut to the longest a field manager may be.
func fieldManager(option string, r *http.Request) string {
	if option != "" {
		return option
	}
	product, _, _ := strings.Cut(r.UserAgent(), "/")
	var b strings.Builder
	for _, c := range product {
		if !unicode.IsPrint(c) {
			continue
		}
		if b.Len()+utf8.RuneLen(c) > metavalidation.FieldManagerMaxLength {
			break
		}
		b.WriteRune(c)
	}
	return b.String()
}

// listOptions reads and checks the query of a list or watch of target t.
// A watch is what the decoded watch parameter says (any value but "0"
// and "false" in any case), or any request on the /watch/ path; the
// rules of a list apply to the latter unless it also says watch.
func listOptions(r *http.Request, t target) (internalversion.ListOptions, error) {
	var o internalversion.ListOptions
	if err := decodeQuery(r, &o); err != nil {
		return o, err
	}
	internalversion.SetListOptionsDefaults(&o, watchListEnabled)
	if errs := listvalidation.ValidateListOptions(&o, watchListEnabled); len(errs) > 0 {
		return o, invalidOptions("ListOptions", errs)
	}
	if o.FieldSelector != nil {
		// These kinds have no field labels of their own: only the two
		// every object has.
		fs, err := o.FieldSelector.Transform(runtime.DefaultMetaV1FieldSelectorConversion)
		if err != nil {
			return o, apierrors.NewBadRequest(err.Error())
		}
		o.FieldSelector = fs
	}
	if t.name != "" {
		byName := fields.OneTermEqualSelector("metadata.name", t.name)
		if o.FieldSelector != nil && !o.FieldSelector.Empty() {
			if n, ok := o.FieldSelector.RequiresExactMatch("metadata.name"); !ok || n != t.name {
				return o, apierrors.NewBadRequest("fieldSelector metadata.name doesn't match requested name")
			}
		} else {
			o.FieldSelector = byName
		}
	}
	return o, nil
}
