package maintain

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/internal/api/store"
)

// The field managers the two writers record their writes under in
// metadata.managedFields, named as kube-apiserver names its own: whoever
// reads an object's managed fields sees which of its fields the server
// maintains.
const (
	// ProducerFieldManager writes the mandatory and suggested objects.
	ProducerFieldManager = "api-priority-and-fairness-config-producer-v1"
	// ConsumerFieldManager applies the Dangling condition.
	ConsumerFieldManager = "api-priority-and-fairness-config-consumer-v1"
)

// Objects is the typed view of stored configuration this package works
// through: objects in v1 hub form, errors as *apierrors.StatusError (so
// that apierrors.IsNotFound, IsAlreadyExists and IsConflict tell them
// apart), every write recorded under the writer's own field manager. The
// server's registry implements it (registry.Registry.As).
type Objects interface {
	// Get returns the named object, or a NotFound error.
	Get(ctx context.Context, res store.Resource, name string) (config.Object, error)
	// List returns every object of res and the resourceVersion of the read.
	List(ctx context.Context, res store.Resource) (objs []config.Object, resourceVersion string, err error)
	// Create stores a new object (AlreadyExists if the name is taken).
	Create(ctx context.Context, obj config.Object) (config.Object, error)
	// Update writes spec and metadata; when metadata.resourceVersion is set
	// it must still be the stored one (Conflict otherwise).
	Update(ctx context.Context, obj config.Object) (config.Object, error)
	// ApplyStatus applies, with server-side apply, the status fields obj
	// sets and nothing else; force takes fields over from other
	// managers. A missing object is a NotFound error.
	ApplyStatus(ctx context.Context, obj config.Object, force bool) (config.Object, error)
	// Delete removes the named object if pre (which may be nil) holds.
	Delete(ctx context.Context, res store.Resource, name string, pre *metav1.Preconditions) (config.Object, error)
}
