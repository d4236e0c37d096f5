package apistatus

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestOf(t *testing.T) {
	st := Of(errors.New("disk on fire"))
	if st.Code != http.StatusInternalServerError || st.Reason != metav1.StatusReasonInternalError || st.Kind != "Status" || st.APIVersion != "v1" || st.Status != metav1.StatusFailure {
		t.Errorf("a plain error: %+v", st)
	}
	st = Of(apierrors.NewTooManyRequests("slow down", 3))
	if st.Code != http.StatusTooManyRequests || st.Message != "slow down" || st.Details.RetryAfterSeconds != 3 {
		t.Errorf("an API error: %+v", st)
	}
}

func TestWrite(t *testing.T) {
	for _, c := range []struct {
		name       string
		st         *metav1.Status
		code       int
		retryAfter string
	}{
		{"plain", New(http.StatusNotFound, metav1.StatusReasonNotFound, "no such thing"), 404, ""},
		{"retry", Of(apierrors.NewTooManyRequests("slow down", 3)), 429, "3"},
		{"no code", &metav1.Status{Message: "?"}, 500, ""},
	} {
		rec := httptest.NewRecorder()
		Write(rec, c.st)
		if rec.Code != c.code || rec.Header().Get("Retry-After") != c.retryAfter ||
			rec.Header().Get("Content-Type") != "application/json" || rec.Header()["X-Content-Type-Options"] != nil {
			t.Errorf("%s: %d %v", c.name, rec.Code, rec.Header())
		}
		var got metav1.Status
		if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || got.Message != c.st.Message {
			t.Errorf("%s: body %q: %v", c.name, rec.Body, err)
		}
	}
}

// TestWriteTimeout: the timeout answer is the Timeout Status, without a
// Content-Type of its own (bench/peer TestTimeoutFilterAnswer compares it
// with kube-apiserver's filter byte for byte).
func TestWriteTimeout(t *testing.T) {
	rec := httptest.NewRecorder()
	WriteTimeout(rec)
	var got metav1.Status
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	want := apierrors.NewTimeoutError("request did not complete within the allotted timeout", 0).ErrStatus
	if rec.Code != http.StatusGatewayTimeout || got.Message != want.Message || got.Reason != want.Reason || got.Code != want.Code || got.Kind != "" ||
		rec.Header()["Content-Type"] != nil {
		t.Errorf("%d %v %q", rec.Code, rec.Header(), rec.Body)
	}
}
