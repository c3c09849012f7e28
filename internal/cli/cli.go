// Package cli is `kubectl lockstep`: the verbs of the lockstep binary that look
// at and steer PodCliqueSet rollouts in a cluster (get, status, history, undo,
// pause, resume, promote, restart). Rendering lives in internal/cli/view and
// the status verdict in internal/cli/verdict; this package talks to the
// cluster.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

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
	flags  *genericclioptions.ConfigFlags
	config *rest.Config
	client client.WithWatch
	scheme *runtime.Scheme
	ns     string
	out    io.Writer
}

func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, appsv1.AddToScheme, eventsv1.AddToScheme, v1alpha1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}

func (s *session) connect() error {
	cfg, err := s.flags.ToRESTConfig()
	if err != nil {
		return usage("%v", err)
	}
	ns, _, err := s.flags.ToRawKubeConfigLoader().Namespace()
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
	if err := s.client.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: name}, pcs); err != nil {
		if client.IgnoreNotFound(err) == nil {
			return nil, usage("PodCliqueSet %s/%s not found", s.ns, name)
		}
		return nil, fmt.Errorf("reading PodCliqueSet %s/%s: %w", s.ns, name, err)
	}
	return pcs, nil
}

// resolveKind accepts the names of PodCliqueSet and refuses the rest, saying
// which kinds the plugin serves.
func resolveKind(kind string) error {
	switch strings.ToLower(kind) {
	case "pcs", "podcliqueset", "podcliquesets", "podcliqueset.lockstep.dev", "podcliquesets.lockstep.dev":
		return nil
	case "fw", "federatedworkload", "federatedworkloads", "federatedworkload.fleet.lockstep.dev", "federatedworkloads.fleet.lockstep.dev":
		return usage("FederatedWorkload is not supported yet: kubectl lockstep works on PodCliqueSets only")
	}
	return usage("kind %q is not supported: kubectl lockstep works on PodCliqueSets (pcs) only", kind)
}

// nameArg reads NAME or KIND/NAME.
func nameArg(arg string) (string, error) {
	if kind, name, ok := strings.Cut(arg, "/"); ok {
		if err := resolveKind(kind); err != nil {
			return "", err
		}
		arg = name
	}
	if arg == "" {
		return "", usage("a PodCliqueSet name is required")
	}
	return arg, nil
}

// oneName is the Args of verbs that take one PodCliqueSet.
func oneName(_ *cobra.Command, args []string) error {
	if len(args) != 1 {
		return usage("expected one PodCliqueSet name, got %d arguments", len(args))
	}
	return nil
}

// Commands returns the plugin verbs, sharing kubectl's connection flags.
func Commands(out io.Writer) []*cobra.Command {
	flags := genericclioptions.NewConfigFlags(true)
	s := &session{flags: flags, out: out}
	cmds := []*cobra.Command{
		newGetCommand(s), newStatusCommand(s), newHistoryCommand(s), newUndoCommand(s),
		newPauseCommand(s, true), newPauseCommand(s, false), newPromoteCommand(s), newRestartCommand(s),
	}
	for _, c := range cmds {
		flags.AddFlags(c.Flags())
		c.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usage("%v", err) })
		c.SilenceUsage = true
		c.GroupID = "plugin"
		c.PreRunE = func(*cobra.Command, []string) error { return s.connect() }
	}
	return cmds
}

// Group is the help group the plugin verbs are listed under.
var Group = &cobra.Group{ID: "plugin", Title: "Rollouts in a cluster (kubectl lockstep):"}
