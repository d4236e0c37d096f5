package authz

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/apfproject/apf/internal/tools/cliflag"
)

// The modes of --authorization-mode. Builtin and Upstream are apf's own;
// the others are kube-apiserver's, with its spelling.
const (
	ModeBuiltin     = "Builtin"
	ModeUpstream    = "Upstream"
	ModeABAC        = "ABAC"
	ModeWebhook     = "Webhook"
	ModeAlwaysAllow = "AlwaysAllow"
	ModeAlwaysDeny  = "AlwaysDeny"
)

// Modes lists every mode, in the order the flag's help gives them.
var Modes = []string{ModeBuiltin, ModeUpstream, ModeABAC, ModeWebhook, ModeAlwaysAllow, ModeAlwaysDeny}

// insteadOf says which of apf's modes does the work of one of
// kube-apiserver's that apf has not, as a sentence to end a refusal with;
// "" for any other value.
func insteadOf(mode string) string {
	switch strings.ToUpper(mode) {
	case "RBAC":
		return ". apf keeps no Roles or RoleBindings: Builtin lets system:masters and --admin-groups do everything; " +
			"ABAC grants per user or group from a policy file; Webhook asks a service, such as a kube-apiserver's RBAC through " +
			"SubjectAccessReviews; Upstream sends the same review to the --upstream kube-apiserver, whose RBAC then decides"
	case "NODE":
		return ". apf serves no Nodes or Pods, so the Node mode has nothing to decide: leave it out"
	}
	return ""
}

// Options configures the authorizer chain. The fields are named after
// kube-apiserver's flags, given in each comment, where it has them.
type Options struct {
	// Modes (--authorization-mode) are the authorizers, asked in order.
	// Empty means Builtin alone.
	Modes []string
	// PolicyFile (--authorization-policy-file) is the ABAC mode's policy
	// file; see ParseABAC.
	PolicyFile string
	// WebhookConfigFile (--authorization-webhook-config-file) is a
	// kubeconfig naming the Webhook mode's remote service: the cluster's
	// server URL is where each SubjectAccessReview is posted, its user the
	// credentials apf presents.
	WebhookConfigFile string
	// WebhookVersion (--authorization-webhook-version) is the
	// authorization.k8s.io version of the reviews sent to the webhook:
	// v1beta1 (kube-apiserver's default) or v1.
	WebhookVersion string
	// WebhookCacheAuthorizedTTL and WebhookCacheUnauthorizedTTL
	// (--authorization-webhook-cache-authorized-ttl,
	// --authorization-webhook-cache-unauthorized-ttl) are how long an
	// answer that allows, and one that does not, is reused for the same
	// review; 0 does not cache. They apply to the Upstream mode too.
	WebhookCacheAuthorizedTTL, WebhookCacheUnauthorizedTTL time.Duration
	// AdminGroups (--admin-groups) are groups whose members, like those of
	// system:masters, the Builtin mode allows everything.
	AdminGroups []string
}

// DefaultOptions returns the Builtin mode alone and kube-apiserver's
// webhook defaults.
func DefaultOptions() Options {
	return Options{
		Modes:                       []string{ModeBuiltin},
		WebhookVersion:              "v1beta1",
		WebhookCacheAuthorizedTTL:   5 * time.Minute,
		WebhookCacheUnauthorizedTTL: 30 * time.Second,
	}
}

// AddFlags registers the options as flags on fs, with the current values
// of o as defaults.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.Var(&modesFlag{modes: &o.Modes}, "authorization-mode",
		"Comma-separated authorizers, asked in order until one allows or denies (none: refused): "+strings.Join(Modes, ", ")+
			". Builtin: system:masters and --admin-groups may do everything, every authenticated user may read the flowcontrol API and discovery, system:monitoring /metrics, everyone the health checks. "+
			"Upstream: a SubjectAccessReview to the --upstream API server, with apf's credentials for it (needs --upstream-identity impersonate).")
	fs.StringVar(&o.PolicyFile, "authorization-policy-file", o.PolicyFile,
		"ABAC policy file, one JSON policy per line (abac.authorization.kubernetes.io/v1beta1), for --authorization-mode ABAC.")
	fs.StringVar(&o.WebhookConfigFile, "authorization-webhook-config-file", o.WebhookConfigFile,
		"kubeconfig naming the remote service to which --authorization-mode Webhook sends a SubjectAccessReview per decision.")
	fs.Var(cliflag.NewChoice(&o.WebhookVersion, WebhookVersions...), "authorization-webhook-version", cliflag.Usage(
		"API version of the authorization.k8s.io SubjectAccessReview sent to and expected from the webhook.", WebhookVersions...))
	fs.DurationVar(&o.WebhookCacheAuthorizedTTL, "authorization-webhook-cache-authorized-ttl", o.WebhookCacheAuthorizedTTL,
		"How long an answer that allows is reused (Webhook and Upstream modes; 0: not cached).")
	fs.DurationVar(&o.WebhookCacheUnauthorizedTTL, "authorization-webhook-cache-unauthorized-ttl", o.WebhookCacheUnauthorizedTTL,
		"How long an answer that does not allow is reused (Webhook and Upstream modes; 0: not cached).")
	fs.Var((*listFlag)(&o.AdminGroups), "admin-groups",
		"Groups whose members may do everything in the Builtin mode, like system:masters.")
}

// WebhookVersions are the values of --authorization-webhook-version.
var WebhookVersions = []string{"v1beta1", "v1"}

// modesFlag is --authorization-mode: comma-separated and repeatable, and
// the first value given replaces the default rather than adding to it. A
// value that is not a mode is refused while the command line is parsed.
type modesFlag struct {
	modes *[]string
	set   bool
}

func (m *modesFlag) String() string {
	if m == nil || m.modes == nil {
		return ""
	}
	return strings.Join(*m.modes, ",")
}

// Type implements pflag.Value.
func (m *modesFlag) Type() string { return "strings" }

func (m *modesFlag) Set(v string) error {
	var modes []string
	if err := (*listFlag)(&modes).Set(v); err != nil {
		return err
	}
	for _, mode := range modes {
		if !slices.Contains(Modes, mode) {
			return fmt.Errorf("%q is not a mode: each must be one of: %s%s", mode, strings.Join(Modes, ", "), insteadOf(mode))
		}
	}
	if !m.set {
		*m.modes = nil
		m.set = true
	}
	*m.modes = append(*m.modes, modes...)
	return nil
}

// listFlag is a comma-separated, repeatable string list flag.
type listFlag []string

func (l *listFlag) String() string {
	if l == nil {
		return ""
	}
	return strings.Join(*l, ",")
}

// Type implements pflag.Value.
func (l *listFlag) Type() string { return "strings" }

func (l *listFlag) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*l = append(*l, s)
		}
	}
	return nil
}

// check reports options that cannot work together, before anything is
// read: kube-apiserver's rules for its modes and files, and apf's for
// --admin-groups, which only the Builtin mode reads.
func (o *Options) check() error {
	modes := o.Modes
	if len(modes) == 0 {
		modes = []string{ModeBuiltin}
	}
	var errs []error
	for i, m := range modes {
		if !slices.Contains(Modes, m) {
			errs = append(errs, fmt.Errorf("--authorization-mode %q is not a mode: give one or more of %s%s", m, strings.Join(Modes, ", "), insteadOf(m)))
		}
		if slices.Contains(modes[:i], m) {
			errs = append(errs, fmt.Errorf("--authorization-mode names %s more than once", m))
		}
	}
	has := func(m string) bool { return slices.Contains(modes, m) }
	switch {
	case has(ModeABAC) && o.PolicyFile == "":
		errs = append(errs, errors.New("--authorization-mode ABAC needs --authorization-policy-file"))
	case !has(ModeABAC) && o.PolicyFile != "":
		errs = append(errs, errors.New("--authorization-policy-file is read only with --authorization-mode ABAC"))
	}
	switch {
	case has(ModeWebhook) && o.WebhookConfigFile == "":
		errs = append(errs, errors.New("--authorization-mode Webhook needs --authorization-webhook-config-file"))
	case !has(ModeWebhook) && o.WebhookConfigFile != "":
		errs = append(errs, errors.New("--authorization-webhook-config-file is read only with --authorization-mode Webhook"))
	}
	if has(ModeWebhook) && o.WebhookVersion != "v1" && o.WebhookVersion != "v1beta1" {
		errs = append(errs, fmt.Errorf("--authorization-webhook-version %q: must be v1 or v1beta1", o.WebhookVersion))
	}
	if o.WebhookCacheAuthorizedTTL < 0 || o.WebhookCacheUnauthorizedTTL < 0 {
		errs = append(errs, errors.New("--authorization-webhook-cache-authorized-ttl and --authorization-webhook-cache-unauthorized-ttl must not be negative"))
	}
	if !has(ModeBuiltin) && len(o.AdminGroups) > 0 {
		errs = append(errs, errors.New("--admin-groups is read only by --authorization-mode Builtin: grant those groups in the policy of the modes given"))
	}
	return errors.Join(errs...)
}

// New builds the chain the options describe: system:masters first, as in
// every kube-apiserver, then the modes in order. Files are read once, here;
// changing them takes a restart. up is how to reach the API behind the
// gateway, nil without one; log receives the Webhook and Upstream modes'
// failures (nil: slog.Default()).
func New(o Options, up *Upstream, log *slog.Logger) (*Chain, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.Default()
	}
	modes := o.Modes
	if len(modes) == 0 {
		modes = []string{ModeBuiltin}
	}
	links := []Named{{Name: "system:masters", Authorizer: privileged{"system:masters"}}}
	for _, m := range modes {
		var (
			z   Authorizer
			err error
		)
		switch m {
		case ModeBuiltin:
			z = NewBuiltin(o.AdminGroups)
		case ModeAlwaysAllow:
			z = alwaysAllow{}
		case ModeAlwaysDeny:
			z = alwaysDeny{}
		case ModeABAC:
			var pl *ABAC
			if pl, err = LoadABAC(o.PolicyFile); err == nil {
				if pl.Unversioned > 0 {
					log.Warn("the ABAC policy file has unversioned lines, read in the legacy format: prefer apiVersion abac.authorization.kubernetes.io/v1beta1, kind Policy",
						"file", o.PolicyFile, "lines", pl.Unversioned)
				}
				z = pl
			}
		case ModeWebhook:
			z, err = newWebhookFromFile(o.WebhookConfigFile, o.WebhookVersion, o.cache(), log)
		case ModeUpstream:
			z, err = newUpstream(up, o.cache(), log)
		}
		if err != nil {
			return nil, err
		}
		links = append(links, Named{Name: modeName(m), Authorizer: z})
	}
	return NewChain(links...), nil
}

// modeName is the name a mode's reasons carry in a chain: kube-apiserver
// names the authorizers of --authorization-mode after the mode in lower
// case, except the webhook, which it calls "default".
func modeName(m string) string {
	if m == ModeWebhook {
		return "default"
	}
	return strings.ToLower(m)
}

// cacheConfig is how long the Webhook and Upstream modes reuse answers.
type cacheConfig struct {
	authorized, unauthorized time.Duration
}

func (o *Options) cache() cacheConfig {
	return cacheConfig{authorized: o.WebhookCacheAuthorizedTTL, unauthorized: o.WebhookCacheUnauthorizedTTL}
}
