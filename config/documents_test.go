package config

import "testing"

func TestIsManifestFile(t *testing.T) {
	for name, want := range map[string]bool{
		"a.yaml": true, "dir/b.YML": true, "c.json": true, "d.Yaml": true,
		"e.txt": false, "yaml": false, "f.yaml.bak": false, ".yamlrc": false, "": false,
	} {
		if got := IsManifestFile(name); got != want {
			t.Errorf("IsManifestFile(%q) = %v, want %v", name, got, want)
		}
	}
}
