package shadow_test

import (
	"context"
	"fmt"
	"net/http"

	"github.com/apfproject/apf/apfdebug"
	"github.com/apfproject/apf/controller"
	"github.com/apfproject/apf/internal/debug/console"
	"github.com/apfproject/apf/internal/debug/shadow"
)

// Running a candidate beside the configuration in force: the shadow reads
// the live objects from the controller's own source and the candidate
// from a directory, the controller tells it of every request, and its dump
// and console section go where the other dumps are.
func Example() {
	ctx := context.Background()
	live := controller.StaticSource(nil) // the built-in configuration
	c, err := controller.New(controller.Config{Source: live})
	if err != nil {
		panic(err)
	}
	sh, err := shadow.New(shadow.Config{
		Live:    live,
		Staged:  controller.NewDirSource("candidate", 0), // the files an administrator would apply
		Watches: c.Watches(),
	})
	if err != nil {
		panic(err)
	}
	go sh.Run(ctx)
	c.SetShadow(sh)

	mux := http.NewServeMux()
	mux.Handle(apfdebug.PathPrefix+"shadow", shadow.Handler(sh))
	mux.Handle(console.PathPrefix, console.Handler(console.WithShadow(console.FromController(c), sh), console.Options{}))

	st := sh.State(false)
	fmt.Println("moved so far:", st.Moved)
	// Output: moved so far: 0
}
