package top

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

const budgetExposition = `# TYPE apiserver_flowcontrol_nominal_limit_seats gauge
apiserver_flowcontrol_nominal_limit_seats{priority_level="global-default"} 17
apiserver_flowcontrol_nominal_limit_seats{priority_level="catch-all"} 4
# TYPE apf_shared_budget_share_seats gauge
apf_shared_budget_share_seats 21
# TYPE apf_shared_budget_limit_seats gauge
apf_shared_budget_limit_seats 30
# TYPE apf_shared_budget_replicas gauge
apf_shared_budget_replicas 3
# TYPE apf_shared_budget_last_exchange_timestamp_seconds gauge
apf_shared_budget_last_exchange_timestamp_seconds 1.7671950435e+09
`

// A replica of a shared limit shows its share beside the levels' nominal
// seats, in the view and in the JSON; a server without one shows nothing
// of it.
func TestSharedBudgetInTheReport(t *testing.T) {
	m, err := ParseMetrics(strings.NewReader(budgetExposition))
	if err != nil {
		t.Fatal(err)
	}
	at := time.Unix(1767195045, 0)
	r := NewReport(nil, &Sample{Server: "https://gw:6443", At: at, Metrics: m, MetricsAt: at}, 0)
	var b bytes.Buffer
	if err := Render(&b, r, Screen{}); err != nil {
		t.Fatal(err)
	}
	if want := "shared limit: share 21 of 30 seats over 3 replicas, levels' nominal seats 21, exchanged 1.5s ago"; !strings.Contains(b.String(), want) {
		t.Errorf("the view lacks %q:\n%s", want, b.String())
	}
	var j bytes.Buffer
	if err := WriteJSON(&j, r); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		SharedBudget *SharedBudget `json:"sharedBudget"`
	}
	if err := json.Unmarshal(j.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if sb := doc.SharedBudget; sb == nil || sb.ShareSeats != 21 || sb.LimitSeats != 30 || sb.Replicas != 3 || sb.LastExchange == nil {
		t.Errorf("JSON sharedBudget: %+v", doc.SharedBudget)
	}

	plain := strings.Split(budgetExposition, "# TYPE apf_shared_budget_share_seats")[0]
	m, err = ParseMetrics(strings.NewReader(plain))
	if err != nil {
		t.Fatal(err)
	}
	r = NewReport(nil, &Sample{Server: "https://kube:6443", At: at, Metrics: m, MetricsAt: at}, 0)
	b.Reset()
	j.Reset()
	if err := Render(&b, r, Screen{}); err != nil {
		t.Fatal(err)
	}
	if err := WriteJSON(&j, r); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "shared limit") || strings.Contains(j.String(), "sharedBudget") {
		t.Errorf("a server without a shared limit shows one:\n%s\n%s", b.String(), j.String())
	}
}
