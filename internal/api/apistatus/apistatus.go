// Package apistatus writes the error answers of apf serve's endpoints the
// way kube-apiserver writes them: a metav1.Status in JSON, with its code
// as the HTTP status, which every Kubernetes client reads. The API, the
// discovery documents, authentication and authorization, the gateway's
// proxy and the panic recovery all answer through it.
//
// It depends on apimachinery only.
package apistatus

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// New is a failure Status with the code, reason and message.
func New(code int, reason metav1.StatusReason, msg string) *metav1.Status {
	return &metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure,
		Message:  msg,
		Reason:   reason,
		Code:     int32(code),
	}
}

// Of is the Status an error is answered with: an API status error's own
// (apierrors), anything else an InternalError. Its kind and apiVersion
// are set, a missing status is Failure and a missing code 500.
func Of(err error) *metav1.Status {
	var api apierrors.APIStatus
	if !errors.As(err, &api) {
		api = apierrors.NewInternalError(err)
	}
	st := api.Status()
	st.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	if st.Status == "" {
		st.Status = metav1.StatusFailure
	}
	if st.Code == 0 {
		st.Code = http.StatusInternalServerError
	}
	return &st
}

// Write answers with st: its code as the HTTP status (500 if it has
// none), the Status as JSON, with the headers the API server's Status
// answers carry and no others (no X-Content-Type-Options: its encoder
// does not set one). A Status that asks the client to retry after a delay
// also says so in a Retry-After header, as the API server's do.
func Write(w http.ResponseWriter, st *metav1.Status) {
	data, err := json.Marshal(st)
	if err != nil {
		data = []byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"the error could not be encoded","code":500}`)
	}
	WriteEncoded(w, st, "application/json", append(data, '\n'))
}

// WriteEncoded answers with st already encoded as body in contentType, for
// a client that negotiated another form than JSON: the status code and
// Retry-After come from st.
func WriteEncoded(w http.ResponseWriter, st *metav1.Status, contentType string, body []byte) {
	code := int(st.Code)
	if code == 0 {
		code = http.StatusInternalServerError
	}
	h := w.Header()
	if st.Details != nil && st.Details.RetryAfterSeconds > 0 {
		h.Set("Retry-After", strconv.Itoa(int(st.Details.RetryAfterSeconds)))
	}
	h.Set("Content-Type", contentType)
	w.WriteHeader(code)
	// The body is best effort once the header is out: a write error means
	// the client has gone.
	_, _ = w.Write(body)
}

// timeoutBody is the body of WriteTimeout: the Status of
// apierrors.NewTimeoutError("request did not complete within the allotted
// timeout", 0) as kube-apiserver's timeout filter encodes it, the Status
// alone (so without kind and apiVersion), followed by a newline.
const timeoutBody = `{"metadata":{},"status":"Failure","message":"Timeout: request did not complete within the allotted timeout","reason":"Timeout","details":{},"code":504}` + "\n"

// WriteTimeout answers a request whose deadline passed before its handler
// answered as kube-apiserver's request timeout (its
// WithTimeoutForNonLongRunningRequests filter) answers it: 504 with the
// Timeout Status. Unlike Write's it sets no Content-Type (net/http's
// sniffing names it text/plain; charset=utf-8), as the filter sets none.
func WriteTimeout(w http.ResponseWriter) {
	w.WriteHeader(http.StatusGatewayTimeout)
	_, _ = io.WriteString(w, timeoutBody)
}
