package maintain

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/internal/store"
)

// Objects is the typed view of stored configuration this package works
// through: objects in v1 hub form, errors as *apierrors.StatusError (so
// that apierrors.IsNotFound, IsAlreadyExists and IsConflict tell them
// apart). The server's registry implements it.
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
	// UpdateStatus writes the status only, under the same precondition.
	UpdateStatus(ctx context.Context, obj config.Object) (config.Object, error)
	// Delete removes the named object if pre (which may be nil) holds.
	Delete(ctx context.Context, res store.Resource, name string, pre *metav1.Preconditions) (config.Object, error)
}
