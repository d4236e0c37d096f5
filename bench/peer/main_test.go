package peer

import (
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	QuietUpstreamLogs()
	os.Exit(m.Run())
}
