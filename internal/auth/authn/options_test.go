package authn

import (
	"io"
	"reflect"
	"testing"

	"github.com/spf13/pflag"
)

func TestAddFlags(t *testing.T) {
	o := DefaultOptions()
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o.AddFlags(fs)
	err := fs.Parse([]string{
		"--token-auth-file=/t.csv",
		"--client-ca-file", "/ca.crt",
		"--requestheader-client-ca-file=/proxy.crt",
		"--requestheader-allowed-names=front-proxy, aggregator",
		"--requestheader-allowed-names=third",
		"--requestheader-username-headers=X-User",
		"--requestheader-uid-headers=X-Uid",
		"--requestheader-group-headers=X-Group",
		"--requestheader-extra-headers-prefix=X-Extra-,X-More-",
		"--anonymous-auth=false",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := Options{
		TokenAuthFile:                   "/t.csv",
		ClientCAFile:                    "/ca.crt",
		RequestHeaderClientCAFile:       "/proxy.crt",
		RequestHeaderAllowedNames:       []string{"front-proxy", "aggregator", "third"},
		RequestHeaderUsernameHeaders:    []string{"X-User"},
		RequestHeaderUIDHeaders:         []string{"X-Uid"},
		RequestHeaderGroupHeaders:       []string{"X-Group"},
		RequestHeaderExtraHeadersPrefix: []string{"X-Extra-", "X-More-"},
		AnonymousAuth:                   false,
	}
	if !reflect.DeepEqual(o, want) {
		t.Fatalf("got %+v\nwant %+v", o, want)
	}
	if f := fs.Lookup("anonymous-auth"); f.DefValue != "true" {
		t.Errorf("anonymous-auth default %q", f.DefValue)
	}
}
