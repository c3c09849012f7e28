// Package cli is `kubectl lockstep`: the verbs of the lockstep binary that look
// at and steer rollouts (get, status, history, undo, pause, resume, promote,
// restart) of PodCliqueSets in a cluster and of FederatedWorkloads on a fleet's
// hub, and show a hub's Placements. Rendering lives in internal/cli/view and
// the status verdict in internal/cli/verdict; this package talks to the
// cluster.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	v1alpha1 "github.com/lockstep-dev/lockstep/api/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/cli/verdict"
)

// AnnotationRestartedAt is the annotation `restart` sets.
const AnnotationRestartedAt = v1alpha1.AnnotationRestartedAt

// ExitError ends the command with Code; Err, when set, is printed first.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// usage is an error of the command line or a missing object: exit status 2.
func usage(format string, args ...any) error {
	return &ExitError{Code: verdict.Usage, Err: fmt.Errorf(format, args...)}
}

// ExitCode prints err (unless it carries only a status) and returns the exit
// status it asks for: 1 for errors that name none.
func ExitCode(err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	var e *ExitError
	if errors.As(err, &e) {
		if e.Err != nil {
			fmt.Fprintf(stderr, "error: %v\n", e.Err)
		}
		return e.Code
	}
	fmt.Fprintf(stderr, "error: %v\n", err)
	return 1
}

// session is a verb's connection to the cluster.
type session struct {
	flags  *connectionFlags
	config *rest.Config
	client client.WithWatch
	scheme *runtime.Scheme
	ns     string
	out    io.Writer
}

func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, appsv1.AddToScheme, eventsv1.AddToScheme, v1alpha1.AddToScheme, fleetv1alpha1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}

func (s *session) connect() error {
	// The plugin speaks through its own output; the informers' log lines
	// (a watch broken while the apiserver goes away, say) are not for its
	// user, and without a logger controller-runtime prints a stack trace.
	ctrllog.SetLogger(logr.Discard())
	loader := s.flags.loader()
	cfg, err := loader.ClientConfig()
	if err != nil {
		return usage("%v", err)
	}
	ns, _, err := loader.Namespace()
	if err != nil {
		return usage("%v", err)
	}
	s.config, s.ns, s.scheme = cfg, ns, newScheme()
	s.client, err = client.NewWithWatch(cfg, client.Options{Scheme: s.scheme})
	return err
}

// getPCS reads the PodCliqueSet; a missing one is a usage error (exit 2).
func (s *session) getPCS(ctx context.Context, name string) (*v1alpha1.PodCliqueSet, error) {
	pcs := &v1alpha1.PodCliqueSet{}
	return pcs, s.read(ctx, kindPodCliqueSet, name, pcs)
}

// getFW reads the FederatedWorkload; a missing one is a usage error (exit 2).
func (s *session) getFW(ctx context.Context, name string) (*fleetv1alpha1.FederatedWorkload, error) {
	fw := &fleetv1alpha1.FederatedWorkload{}
	return fw, s.read(ctx, kindFederatedWorkload, name, fw)
}

// read reads the object k name of the namespace into obj; a missing one is a
// usage error (exit 2).
func (s *session) read(ctx context.Context, k kind, name string, obj client.Object) error {
	if err := s.client.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: name}, obj); err != nil {
		if client.IgnoreNotFound(err) == nil {
			return usage("%s %s/%s not found", k, s.ns, name)
		}
		if meta.IsNoMatchError(err) && k != kindPodCliqueSet {
			return usage("this cluster serves no %ss: they live on a fleet's hub (is --context or KUBECONFIG the hub's?)", k)
		}
		return fmt.Errorf("reading %s %s/%s: %w", k, s.ns, name, err)
	}
	return nil
}

// kind is a kind of object the plugin serves.
type kind int

const (
	kindPodCliqueSet kind = iota
	kindFederatedWorkload
	kindPlacement
)

func (k kind) String() string {
	return [...]string{"PodCliqueSet", "FederatedWorkload", "Placement"}[k]
}

// resource is the kind as kubectl prints it: "federatedworkload/web".
func (k kind) resource() string { return strings.ToLower(k.String()) }

// resolveKind reads the names of the kinds the plugin serves, as kubectl
// accepts them (short names, plural, with group).
func resolveKind(name string) (kind, error) {
	switch strings.ToLower(name) {
	case "pcs", "podcliqueset", "podcliquesets", "podcliqueset.lockstep.dev", "podcliquesets.lockstep.dev":
		return kindPodCliqueSet, nil
	case "fw", "fwl", "federatedworkload", "federatedworkloads", "federatedworkload.fleet.lockstep.dev", "federatedworkloads.fleet.lockstep.dev":
		return kindFederatedWorkload, nil
	case "plc", "placement", "placements", "placement.fleet.lockstep.dev", "placements.fleet.lockstep.dev":
		return kindPlacement, nil
	}
	return 0, usage("kind %q is not supported: kubectl lockstep works on PodCliqueSets (pcs), FederatedWorkloads (fw) and, with get and status, Placements (placement)", name)
}

// target reads NAME (a PodCliqueSet) or KIND/NAME for verb, which serves the
// kinds given.
func target(verb, arg string, serves ...kind) (kind, string, error) {
	k, name := kindPodCliqueSet, arg
	if kn, n, ok := strings.Cut(arg, "/"); ok {
		var err error
		if k, err = resolveKind(kn); err != nil {
			return 0, "", err
		}
		name = n
	}
	if name == "" {
		return 0, "", usage("a %s name is required", k)
	}
	if !slices.Contains(serves, k) {
		var names []string
		for _, s := range serves {
			names = append(names, s.String()+"s")
		}
		return 0, "", usage("%s works on %s, not on a %s", verb, strings.Join(names, " and "), k)
	}
	return k, name, nil
}

// oneName is the Args of verbs that take one object.
func oneName(_ *cobra.Command, args []string) error {
	if len(args) != 1 {
		return usage("expected one name (NAME or KIND/NAME), got %d arguments", len(args))
	}
	return nil
}

// Commands returns the plugin verbs, sharing kubectl's connection flags.
func Commands(out io.Writer) []*cobra.Command {
	flags := newConnectionFlags()
	s := &session{flags: flags, out: out}
	cmds := []*cobra.Command{
		newGetCommand(s), newStatusCommand(s), newHistoryCommand(s), newUndoCommand(s),
		newPauseCommand(s, true), newPauseCommand(s, false), newPromoteCommand(s), newApproveCommand(s), newRestartCommand(s),
	}
	for _, c := range cmds {
		flags.bind(c.Flags())
		c.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usage("%v", err) })
		c.SilenceUsage = true
		c.GroupID = "plugin"
		c.PreRunE = func(*cobra.Command, []string) error { return s.connect() }
	}
	return cmds
}

// Group is the help group the plugin verbs are listed under.
var Group = &cobra.Group{ID: "plugin", Title: "Rollouts in a cluster or over a fleet (kubectl lockstep):"}
