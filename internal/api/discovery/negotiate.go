package discovery

import "github.com/munnerz/goautoneg"

// discoveryForm is the form of the /api and /apis documents a request
// gets.
type discoveryForm int

const (
	// formNone: nothing the request accepts can be given (406).
	formNone discoveryForm = iota
	// formLegacy: APIVersions or APIGroupList, as plain JSON.
	formLegacy
	// formAggregated: apidiscovery.k8s.io/v2 APIGroupDiscoveryList.
	formAggregated
)

// negotiated is the outcome of negotiating the Accept header of a request
// for /api or /apis.
type negotiated struct {
	form discoveryForm
	// legacyToo says that, when the form is aggregated, the request also
	// accepts the legacy form: an upstream that cannot give the
	// aggregated form may answer with it.
	legacyToo bool
	// noPeer is the aggregated clause's profile=nopeer.
	noPeer bool
}

// notAcceptableMessage is the message of the 406 answer, in
// kube-apiserver's words, naming the one media type these documents are
// served in.
const notAcceptableMessage = "only the following media types are accepted: application/json"

// negotiateDiscovery chooses the form of /api or /apis for an Accept
// header the way kube-apiserver v1.37 does, for the one media type served
// here, JSON:
//
//   - The clauses are taken in goautoneg's order (by q, then specific types
//     before wildcards). q itself plays no other part: a clause with q=0 is
//     still a candidate, as it is upstream.
//   - The aggregated form is given when any clause that matches
//     application/json (application/json, application/*, */*) converts to
//     g=apidiscovery.k8s.io, v=v2, as=APIGroupDiscoveryList. Upstream
//     looks for such a clause first, before any plain one, so "application/json,
//     <aggregated>" gets the aggregated form. v2beta1 is no longer served
//     (its removal is locked in since 1.35): such a clause is passed over.
//   - Otherwise the first clause that matches application/json without a
//     conversion gets the legacy form; an empty header gets it too.
//   - A clause with a stream parameter other than watch, or with a server
//     version (sv), is passed over.
//   - Nothing left: 406. Upstream would also serve YAML and protobuf;
//     these documents are JSON only, so a request that accepts only those
//     gets the 406.
func negotiateDiscovery(accept string) negotiated {
	if accept == "" {
		return negotiated{form: formLegacy}
	}
	clauses := goautoneg.ParseAccept(accept)
	var out negotiated
	for _, c := range clauses {
		if !matchesJSON(c) || !allowedParams(c.Params) {
			continue
		}
		if hasConversion(c.Params) && isAggregatedV2(c.Params) {
			out = negotiated{form: formAggregated, noPeer: c.Params["profile"] == "nopeer"}
			break
		}
	}
	for _, c := range clauses {
		if !matchesJSON(c) || !allowedParams(c.Params) || hasConversion(c.Params) {
			continue
		}
		if out.form == formAggregated {
			out.legacyToo = true
		} else {
			out = negotiated{form: formLegacy}
		}
		break
	}
	return out
}

// matchesJSON says whether a clause admits application/json.
func matchesJSON(c goautoneg.Accept) bool {
	switch {
	case c.Type == "application" && (c.SubType == "json" || c.SubType == "*"):
		return true
	case c.Type == "*" && c.SubType == "*":
		return true
	}
	return false
}

// allowedParams passes over the clauses upstream refuses whatever the
// conversion: a stream other than a watch, or a server version.
func allowedParams(p map[string]string) bool {
	if s := p["stream"]; s != "" && s != "watch" {
		return false
	}
	return p["sv"] == ""
}

// hasConversion says whether a clause asks for a conversion (any of g, v
// or as).
func hasConversion(p map[string]string) bool {
	_, g := p["g"]
	_, v := p["v"]
	_, as := p["as"]
	return g || v || as
}

func isAggregatedV2(p map[string]string) bool {
	return p["g"] == "apidiscovery.k8s.io" && p["v"] == "v2" && p["as"] == "APIGroupDiscoveryList"
}

// upstreamAccept is the Accept header that asks an upstream API server
// for the form n chose: the aggregated form (with the caller's profile)
// and, when the caller takes it too, the legacy one as a fallback for an
// upstream that has no aggregated discovery.
func (n negotiated) upstreamAccept() string {
	switch n.form {
	case formAggregated:
		a := aggregatedContentType
		if n.noPeer {
			a += ";profile=nopeer"
		}
		if n.legacyToo {
			a += ",application/json"
		}
		return a
	case formLegacy:
		return "application/json"
	}
	return ""
}
