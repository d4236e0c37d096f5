package deploy

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/x509"
	"debug/elf"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// The image's fixed facts, as the Containerfile states them.
const (
	imageUser       = "65532:65532"
	imageBinary     = "apf"
	imageCACerts    = "etc/ssl/certs/ca-certificates.crt"
	labelPrefix     = "org.opencontainers.image."
	imageSourceRepo = "https://github.com/apfproject/apf"
)

// versionInfo is the part of `apf version -o json` the image must agree
// with.
type versionInfo struct {
	Version string `json:"version"`
	Commit  string `json:"commit"`
}

// imageConfig is the part of an OCI image configuration the tests read,
// as buildah inspect prints it (under OCIv1) and as the archive holds it.
type imageConfig struct {
	Config struct {
		User       string            `json:"User"`
		Entrypoint []string          `json:"Entrypoint"`
		Cmd        []string          `json:"Cmd"`
		Labels     map[string]string `json:"Labels"`
	} `json:"config"`
}

// TestImage inspects the image `make image` built (make image-test names it
// in APF_IMAGE, its OCI archive in APF_IMAGE_ARCHIVE, the buildah command
// of its store in APF_BUILDAH and the host's binary in APF_BINARY): its
// entrypoint, user and labels; its files, nothing but the binary and the CA
// certificates; and the binary taken out of the archive's layers, which
// must be static and report the version the labels give, the host binary's.
func TestImage(t *testing.T) {
	ref := os.Getenv("APF_IMAGE")
	if ref == "" {
		t.Skip("APF_IMAGE is not set: make image-test builds the image and runs this test")
	}
	archive, buildahCmd, hostBinary := os.Getenv("APF_IMAGE_ARCHIVE"), strings.Fields(os.Getenv("APF_BUILDAH")), os.Getenv("APF_BINARY")
	if archive == "" || len(buildahCmd) == 0 || hostBinary == "" {
		t.Fatal("APF_IMAGE is set without APF_IMAGE_ARCHIVE, APF_BUILDAH and APF_BINARY (run make image-test)")
	}
	if _, err := exec.LookPath(buildahCmd[0]); err != nil {
		t.Fatalf("buildah is needed to inspect the image (make buildah installs it): %v", err)
	}

	// The image in buildah's store.
	out, err := exec.Command(buildahCmd[0], append(buildahCmd[1:], "inspect", "--type", "image", ref)...).Output()
	if err != nil {
		t.Fatalf("buildah inspect %s: %v", ref, stderrOf(err))
	}
	var inspected struct {
		FromImageID string      `json:"FromImageID"`
		OCIv1       imageConfig `json:"OCIv1"`
	}
	if err := json.Unmarshal(out, &inspected); err != nil {
		t.Fatalf("buildah inspect: %v", err)
	}
	cfg := inspected.OCIv1.Config
	if !slices.Equal(cfg.Entrypoint, []string{"/" + imageBinary}) || len(cfg.Cmd) != 0 {
		t.Errorf("entrypoint %q, cmd %q: want [/%s] and none", cfg.Entrypoint, cfg.Cmd, imageBinary)
	}
	if cfg.User != imageUser {
		t.Errorf("user %q, want %q", cfg.User, imageUser)
	}

	// The archive: the same image, its files and its binary.
	img := readOCIArchive(t, archive)
	if img.configDigest != "sha256:"+inspected.FromImageID {
		t.Errorf("the archive's image %s is not the store's %s", img.configDigest, inspected.FromImageID)
	}
	if !slices.Equal(img.config.Config.Entrypoint, cfg.Entrypoint) || img.config.Config.User != cfg.User {
		t.Errorf("the archive's configuration differs from the store's: %+v", img.config.Config)
	}
	var names []string
	for name := range img.files {
		names = append(names, name)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{imageBinary, imageCACerts}) {
		t.Errorf("files in the image: %q, want only %s and %s", names, imageBinary, imageCACerts)
	}
	if f, ok := img.files[imageBinary]; ok && (f.mode&0o111 == 0 || f.mode&0o022 != 0 || f.uid != 0) {
		t.Errorf("/%s: mode %o, owner %d: want executable, writable by root only", imageBinary, f.mode, f.uid)
	}
	if f, ok := img.files[imageCACerts]; ok && !x509.NewCertPool().AppendCertsFromPEM(f.data) {
		t.Errorf("/%s holds no PEM certificate", imageCACerts)
	}

	dir := t.TempDir()
	bin := filepath.Join(dir, imageBinary)
	if err := os.WriteFile(bin, img.files[imageBinary].data, 0o755); err != nil {
		t.Fatal(err)
	}
	if interp := elfInterpreter(t, bin); interp != "" {
		t.Errorf("the image's binary is dynamically linked (interpreter %s): an empty image has no libc", interp)
	}
	inImage := runVersion(t, bin)
	onHost := runVersion(t, hostBinary)

	labels := cfg.Labels
	want := map[string]string{
		"title":    "apf",
		"source":   imageSourceRepo,
		"version":  inImage.Version,
		"revision": inImage.Commit,
	}
	for k, v := range want {
		if got := labels[labelPrefix+k]; got != v {
			t.Errorf("label %s%s = %q, want %q", labelPrefix, k, got, v)
		}
	}
	if labels[labelPrefix+"description"] == "" {
		t.Errorf("no %sdescription label", labelPrefix)
	}
	if _, err := time.Parse(time.RFC3339, labels[labelPrefix+"created"]); err != nil {
		t.Errorf("label %screated: %v", labelPrefix, err)
	}
	if inImage != onHost {
		t.Errorf("the image's binary says %+v, bin/apf says %+v", inImage, onHost)
	}
	if !strings.HasSuffix(ref, ":"+regexp.MustCompile(`[^A-Za-z0-9_.-]`).ReplaceAllString(inImage.Version, "_")) {
		t.Errorf("image %s is not tagged with its version %s", ref, inImage.Version)
	}
}

// runVersion runs `BIN version -o json`.
func runVersion(t *testing.T, bin string) versionInfo {
	t.Helper()
	out, err := exec.Command(bin, "version", "-o", "json").Output()
	if err != nil {
		t.Fatalf("%s version -o json: %v", bin, stderrOf(err))
	}
	var v versionInfo
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("%s version -o json: %v\n%s", bin, err, out)
	}
	return v
}

// elfInterpreter returns the program interpreter an ELF executable asks
// for: empty for a static binary.
func elfInterpreter(t *testing.T, file string) string {
	t.Helper()
	f, err := elf.Open(file)
	if err != nil {
		t.Fatalf("the image's binary: %v", err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			b, _ := io.ReadAll(p.Open())
			return string(bytes.TrimRight(b, "\x00"))
		}
	}
	return ""
}

// An imageFile is a regular file of an image's filesystem.
type imageFile struct {
	mode int64
	uid  int
	data []byte
}

// ociImage is what readOCIArchive reads: the configuration, its digest,
// and the regular files of the layers applied in order.
type ociImage struct {
	configDigest string
	config       imageConfig
	files        map[string]imageFile
}

// readOCIArchive reads an OCI image layout in a tar archive (what buildah
// push oci-archive: writes) holding one image.
func readOCIArchive(t *testing.T, archive string) ociImage {
	t.Helper()
	blobs := map[string][]byte{}
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(bufio.NewReader(f))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", archive, err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatalf("%s: %s: %v", archive, h.Name, err)
		}
		blobs[path.Clean(h.Name)] = b
	}
	blob := func(digest string) []byte {
		algo, hex, ok := strings.Cut(digest, ":")
		b, found := blobs[path.Join("blobs", algo, hex)]
		if !ok || !found {
			t.Fatalf("%s: no blob %q", archive, digest)
		}
		return b
	}
	type descriptor struct {
		MediaType string `json:"mediaType"`
		Digest    string `json:"digest"`
	}
	var index struct {
		Manifests []descriptor `json:"manifests"`
	}
	if err := json.Unmarshal(blobs["index.json"], &index); err != nil || len(index.Manifests) != 1 {
		t.Fatalf("%s: index.json: want one manifest, got %d (%v)", archive, len(index.Manifests), err)
	}
	var manifest struct {
		Config descriptor   `json:"config"`
		Layers []descriptor `json:"layers"`
	}
	if err := json.Unmarshal(blob(index.Manifests[0].Digest), &manifest); err != nil {
		t.Fatalf("%s: manifest: %v", archive, err)
	}
	img := ociImage{configDigest: manifest.Config.Digest, files: map[string]imageFile{}}
	if err := json.Unmarshal(blob(manifest.Config.Digest), &img.config); err != nil {
		t.Fatalf("%s: configuration: %v", archive, err)
	}
	for _, l := range manifest.Layers {
		var r io.Reader = bytes.NewReader(blob(l.Digest))
		switch l.MediaType {
		case "application/vnd.oci.image.layer.v1.tar":
		case "application/vnd.oci.image.layer.v1.tar+gzip":
			zr, err := gzip.NewReader(r)
			if err != nil {
				t.Fatalf("%s: layer %s: %v", archive, l.Digest, err)
			}
			r = zr
		default:
			t.Fatalf("%s: layer %s of media type %s, which this test does not read", archive, l.Digest, l.MediaType)
		}
		if err := applyLayer(img.files, r); err != nil {
			t.Fatalf("%s: layer %s: %v", archive, l.Digest, err)
		}
	}
	return img
}

// applyLayer applies a layer's tar stream to files: regular files are
// added, whiteouts remove what they name; directories are implied; any
// other kind of entry (a link, a device) is an error, none belonging in
// this image.
func applyLayer(files map[string]imageFile, r io.Reader) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		name := strings.TrimPrefix(path.Clean("/"+h.Name), "/")
		dir, base := path.Split(name)
		if base == ".wh..wh..opq" {
			for f := range files {
				if strings.HasPrefix(f, dir) {
					delete(files, f)
				}
			}
			continue
		}
		if removed, ok := strings.CutPrefix(base, ".wh."); ok {
			target := path.Join(dir, removed)
			for f := range files {
				if f == target || strings.HasPrefix(f, target+"/") {
					delete(files, f)
				}
			}
			continue
		}
		switch h.Typeflag {
		case tar.TypeDir:
		case tar.TypeReg:
			b, err := io.ReadAll(tr)
			if err != nil {
				return err
			}
			files[name] = imageFile{mode: h.Mode, uid: h.Uid, data: b}
		default:
			return fmt.Errorf("%s: entry of type %q", name, h.Typeflag)
		}
	}
}

// stderrOf adds a failed command's standard error to its error.
func stderrOf(err error) error {
	if ee, ok := err.(*exec.ExitError); ok && len(ee.Stderr) > 0 {
		return fmt.Errorf("%w: %s", err, bytes.TrimSpace(ee.Stderr))
	}
	return err
}

// TestContainerfileGoVersion holds the Go image the Containerfile builds
// from to the Go version go.mod names, so that the image's binary is built
// with the toolchain the repository is tested with.
func TestContainerfileGoVersion(t *testing.T) {
	gomod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	containerfile, err := os.ReadFile("../Containerfile")
	if err != nil {
		t.Fatal(err)
	}
	want := regexp.MustCompile(`(?m)^go (\S+)$`).FindSubmatch(gomod)
	if m := regexp.MustCompile(`(?m)^toolchain go(\S+)$`).FindSubmatch(gomod); m != nil {
		want = m
	}
	got := regexp.MustCompile(`(?m)^ARG GO_VERSION=(\S+)$`).FindSubmatch(containerfile)
	if want == nil || got == nil {
		t.Fatalf("no go directive in go.mod (%q) or no ARG GO_VERSION in the Containerfile (%q)", want, got)
	}
	if string(got[1]) != string(want[1]) {
		t.Errorf("Containerfile: ARG GO_VERSION=%s, go.mod says %s", got[1], want[1])
	}
}
