package repocheck

import (
	"fmt"
	"strings"
	"testing"
)

// The rooms of internal/, one per face of the product (internal/doc.go
// maps them), from the bottom up: a package may import packages of its own
// room and of the rooms on the lines above its own, never one beside or
// below it. A package under internal/ that sits in no room fails as well,
// so that a new package is placed with the face it serves.
var rooms = [][]string{
	{"screen"},          // the standard library and x/term only
	{"tools", "debug"},  // the library only
	{"api"},             // the flowcontrol API
	{"auth", "proxy"},   // answer in api's Status dialect
	{"server"},          // the composition of every room above
	{"demo", "testing"}, // start a server
}

// roomOf returns the room of a path relative to the module, and whether
// the path is under internal/ at all (the map itself, internal, is in no
// room and imports nothing).
func roomOf(rel string) (string, bool) {
	rest, ok := strings.CutPrefix(rel, "internal/")
	if !ok {
		return "", false
	}
	room, _, _ := strings.Cut(rest, "/")
	return room, true
}

// roomViolations lists the packages under internal/ that sit in no room
// of layers, and the imports that run sideways or upward between rooms.
func roomViolations(pkgs map[string]listedPackage, layers [][]string) []string {
	level := map[string]int{}
	for i, line := range layers {
		for _, room := range line {
			level[room] = i
		}
	}
	var out []string
	for _, rel := range sortedKeys(pkgs) {
		room, ok := roomOf(rel)
		if !ok {
			continue
		}
		at, known := level[room]
		if !known {
			out = append(out, fmt.Sprintf("%s: in no room of internal/ (add it to the room of the face it serves, or name a new room in internal/doc.go and here)", rel))
			continue
		}
		for _, imp := range moduleImports(pkgs[rel]) {
			to, ok := roomOf(imp)
			if !ok || to == room {
				continue
			}
			if l, known := level[to]; known && l < at {
				continue
			}
			out = append(out, fmt.Sprintf("%s imports %s: room %s may import only the rooms below it, and %s is not one (internal/doc.go)", rel, imp, room, to))
		}
	}
	return out
}

// Every package under internal/ sits in a room, and the arrows between
// rooms point down.
func TestInternalRooms(t *testing.T) {
	for _, v := range roomViolations(listModule(t), rooms) {
		t.Error(v)
	}
}

// The check itself, on a made-up module.
func TestRoomChecks(t *testing.T) {
	pkgs := map[string]listedPackage{}
	add := func(rel string, imports ...string) {
		p := listedPackage{ImportPath: modulePath + "/" + rel, Name: rel[strings.LastIndex(rel, "/")+1:]}
		for _, imp := range imports {
			p.Imports = append(p.Imports, modulePath+"/"+imp)
		}
		pkgs[rel] = p
	}
	add("controller")
	add("internal")
	add("internal/api/store")
	add("internal/api/registry", "internal/api/store", "controller")
	add("internal/server", "internal/api/registry", "internal/proxy")
	add("internal/proxy", "internal/api/store")
	if got := roomViolations(pkgs, rooms); len(got) != 0 {
		t.Errorf("a module that keeps the rooms: %q", got)
	}
	add("internal/flat")
	add("internal/api/store", "internal/server")
	add("internal/auth/authz", "internal/proxy")
	got := roomViolations(pkgs, rooms)
	want := []string{
		"internal/api/store imports internal/server: ",
		"internal/auth/authz imports internal/proxy: ",
		"internal/flat: in no room",
	}
	if len(got) != len(want) {
		t.Fatalf("violations:\n got %q\nwant prefixes %q", got, want)
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("violation %d: got %q, want it to start with %q", i, got[i], want[i])
		}
	}
}
