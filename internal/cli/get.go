package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/yaml"

	fleetv1alpha1 "github.com/lockstep-dev/lockstep/api/fleet/v1alpha1"
	"github.com/lockstep-dev/lockstep/internal/cli/verdict"
	"github.com/lockstep-dev/lockstep/internal/cli/view"
)

type getOptions struct {
	watch, pods, noColor, untilDone bool
	output                          string
	timeout                         time.Duration
}

func newGetCommand(s *session) *cobra.Command {
	o := &getOptions{}
	cmd := &cobra.Command{
		Use:   "get KIND NAME | KIND/NAME [-w] [--pods] [-o json|yaml]",
		Short: "Show a rollout as a tree: a PodCliqueSet's replicas, roles and pods, a FederatedWorkload's member clusters, a Placement's decision groups",
		Long: `get shows where a rollout stands.

A PodCliqueSet (pcs): status and reason, strategy, role step, partition,
pause, revisions and images, replica counts, time since the rollout started
and until its progress deadline; the pods it waits on and why; and a tree in
index order (replica, clique or scaling group, group replica, clique, pods)
with icons and tags: rev, updating, held, surge, step i/N, gang:NotScheduled,
ready n/m.

A FederatedWorkload (fw), on a fleet's hub: status and reason, template kind
and images, placement; what the whole fleet waits on; the workload (update
revision, generation, updated and available units, the global maxUnavailable
and maxSurge with how much of each is in use, partition, pause) and under it
each member cluster: its share, its grant, updated and available units, and
what it waits on.

A Placement (placement), on a hub: its selection, strategy and conditions,
and a tree of its decision groups, their PlacementDecisions (slices) and the
clusters in each.

Icons: ✔ every unit ready, ◐ some ready, ✖ none ready, ○ not scheduled, ⊘ terminating or leaving.`,
		Example: `  kubectl lockstep get pcs disagg
  kubectl lockstep get pcs disagg -w --pods
  kubectl lockstep get pcs disagg -w --until-done --timeout 5m --no-color
  kubectl lockstep get fw/web -w
  kubectl lockstep get placement/gpu-clusters`,
		Args: func(_ *cobra.Command, args []string) error {
			switch len(args) {
			case 1:
				if !strings.Contains(args[0], "/") {
					return usage("expected KIND NAME or KIND/NAME (get pcs NAME, get fw/NAME), got %q", args[0])
				}
				_, _, err := target("get", args[0], kindPodCliqueSet, kindFederatedWorkload, kindPlacement)
				return err
			case 2:
				_, err := resolveKind(args[0])
				return err
			}
			return usage("expected KIND NAME or KIND/NAME (get pcs NAME, get fw/NAME), got %d arguments", len(args))
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			arg := args[0]
			if len(args) == 2 {
				arg = args[0] + "/" + args[1]
			}
			k, name, err := target("get", arg, kindPodCliqueSet, kindFederatedWorkload, kindPlacement)
			if err != nil {
				return err
			}
			if o.pods && k != kindPodCliqueSet {
				return usage("--pods is for PodCliqueSets: a %s's pods are in its member clusters", k)
			}
			switch k {
			case kindFederatedWorkload:
				return s.getFederated(cmd.Context(), name, o)
			case kindPlacement:
				return s.getPlacement(cmd.Context(), name, o)
			}
			return s.get(cmd.Context(), name, o)
		},
	}
	f := cmd.Flags()
	f.BoolVarP(&o.watch, "watch", "w", false, "Redraw on every change of the object and what `get` shows of it.")
	f.BoolVar(&o.pods, "pods", false, "List every pod instead of counts (PodCliqueSets).")
	f.BoolVar(&o.noColor, "no-color", false, "No colours (the default when the output is not a terminal).")
	f.StringVarP(&o.output, "output", "o", "", "Print the object as json or yaml instead.")
	f.BoolVar(&o.untilDone, "until-done", false, "With -w: stop when the rollout completes, stalls or halts (exit status as `status`).")
	f.DurationVar(&o.timeout, "timeout", 0, "With -w: stop after this long (0: never).")
	return cmd
}

// checkOutput accepts -o json, yaml or nothing.
func checkOutput(o *getOptions) error {
	switch o.output {
	case "", "json", "yaml":
		return nil
	}
	return usage("--output must be json or yaml, got %q", o.output)
}

func (o *getOptions) viewOptions(s *session) view.Options {
	return view.Options{Pods: o.pods, Color: isTerminal(s.out) && !o.noColor}
}

// frame is one drawing of a watched object: its text, the verdict
// --until-done ends on, and whether the object is gone.
type frame func(ctx context.Context) (text []byte, v verdict.Verdict, gone bool, err error)

// follow redraws what draw returns each time changed fires (and, with tick,
// every second on a terminal, for the clock fields) until ctx ends, the
// object is deleted, or with --until-done its verdict is final.
func (s *session) follow(ctx context.Context, o *getOptions, what string, changed <-chan struct{}, tick bool, draw frame) error {
	tty := isTerminal(s.out)
	var ticks <-chan time.Time
	if tty && tick {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		ticks = t.C
	}
	var last []byte
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		case <-ticks:
		}
		text, v, gone, err := draw(ctx)
		if err != nil {
			return err
		}
		if gone {
			fmt.Fprintf(s.out, "%s was deleted\n", what)
			return &ExitError{Code: verdict.Failed}
		}
		if !bytes.Equal(text, last) {
			if tty {
				fmt.Fprint(s.out, "\x1b[H\x1b[2J")
			} else if last != nil {
				fmt.Fprintf(s.out, "\n--- %s\n", time.Now().Format("15:04:05"))
			}
			_, _ = s.out.Write(text)
			last = text
		}
		if o.untilDone && v.Final {
			return exitWith(v.Code)
		}
	}
}

// withTimeout bounds ctx by --timeout when it is set.
func withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d > 0 {
		return context.WithTimeout(ctx, d)
	}
	return context.WithCancel(ctx)
}

func (s *session) get(ctx context.Context, name string, o *getOptions) error {
	pcs, err := s.getPCS(ctx, name)
	if err != nil {
		return err
	}
	if err := checkOutput(o); err != nil {
		return err
	}
	if o.output != "" {
		return s.printObject(pcs, o.output)
	}
	opts := o.viewOptions(s)
	if !o.watch {
		snap, err := load(ctx, s.client, s.ns, name, pcs)
		if err != nil {
			return err
		}
		snap.Now = time.Now()
		return view.Render(s.out, snap, opts)
	}
	ctx, cancel := withTimeout(ctx, o.timeout)
	defer cancel()
	w, err := s.watch(ctx, name, false)
	if err != nil {
		return err
	}
	return s.follow(ctx, o, fmt.Sprintf("PodCliqueSet %s/%s", s.ns, name), w.changed, true, func(ctx context.Context) ([]byte, verdict.Verdict, bool, error) {
		pcs, err := w.pcs(ctx)
		if err != nil || pcs == nil {
			return nil, verdict.Verdict{}, pcs == nil, err
		}
		snap, err := load(ctx, w.cache, s.ns, name, pcs)
		if err != nil {
			return nil, verdict.Verdict{}, false, err
		}
		snap.Now = time.Now()
		var b bytes.Buffer
		err = view.Render(&b, snap, opts)
		return b.Bytes(), verdict.Of(verdict.Input{PCS: pcs}), false, err
	})
}

func (s *session) getFederated(ctx context.Context, name string, o *getOptions) error {
	fw, err := s.getFW(ctx, name)
	if err != nil {
		return err
	}
	if err := checkOutput(o); err != nil {
		return err
	}
	if o.output != "" {
		return s.printObject(fw, o.output)
	}
	opts := o.viewOptions(s)
	if !o.watch {
		return view.RenderFederated(s.out, fw, opts)
	}
	ctx, cancel := withTimeout(ctx, o.timeout)
	defer cancel()
	w, err := s.watchFederated(ctx, name)
	if err != nil {
		return err
	}
	return s.follow(ctx, o, fmt.Sprintf("FederatedWorkload %s/%s", s.ns, name), w.changed, false, func(ctx context.Context) ([]byte, verdict.Verdict, bool, error) {
		fw, err := w.federated(ctx)
		if err != nil || fw == nil {
			return nil, verdict.Verdict{}, fw == nil, err
		}
		var b bytes.Buffer
		err = view.RenderFederated(&b, fw, opts)
		return b.Bytes(), verdict.OfFederated(verdict.FederatedInput{FW: fw}), false, err
	})
}

// canListClusters tells whether the user may list MemberClusters (cluster
// scoped: a tenant of the hub may not); the placement is drawn without their
// state otherwise.
func (s *session) canListClusters(ctx context.Context) (bool, error) {
	var mcs fleetv1alpha1.MemberClusterList
	err := s.client.List(ctx, &mcs, client.Limit(1))
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsForbidden(err):
		return false, nil
	}
	return false, fmt.Errorf("listing MemberClusters: %w", err)
}

func (s *session) getPlacement(ctx context.Context, name string, o *getOptions) error {
	pl := &fleetv1alpha1.Placement{}
	if err := s.read(ctx, kindPlacement, name, pl); err != nil {
		return err
	}
	if err := checkOutput(o); err != nil {
		return err
	}
	if o.output != "" {
		return s.printObject(pl, o.output)
	}
	clusters, err := s.canListClusters(ctx)
	if err != nil {
		return err
	}
	opts := o.viewOptions(s)
	if !o.watch {
		snap, err := loadPlacement(ctx, s.client, s.ns, name, clusters)
		if err != nil {
			return err
		}
		if snap == nil {
			return usage("Placement %s/%s not found", s.ns, name)
		}
		return view.RenderPlacement(s.out, snap, opts)
	}
	ctx, cancel := withTimeout(ctx, o.timeout)
	defer cancel()
	w, err := s.watchPlacement(ctx, name, clusters)
	if err != nil {
		return err
	}
	return s.follow(ctx, o, fmt.Sprintf("Placement %s/%s", s.ns, name), w.changed, false, func(ctx context.Context) ([]byte, verdict.Verdict, bool, error) {
		snap, err := loadPlacement(ctx, w.cache, s.ns, name, clusters)
		if err != nil || snap == nil {
			return nil, verdict.Verdict{}, snap == nil, err
		}
		var b bytes.Buffer
		err = view.RenderPlacement(&b, snap, opts)
		return b.Bytes(), verdict.OfPlacement(snap.Placement), false, err
	})
}

// printObject prints obj as kubectl get -o does, without managed fields.
func (s *session) printObject(obj client.Object, format string) error {
	gvk, err := apiutil.GVKForObject(obj, s.scheme)
	if err != nil {
		return err
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	obj.SetManagedFields(nil)
	if format == "yaml" {
		b, err := yaml.Marshal(obj)
		if err != nil {
			return err
		}
		_, err = s.out.Write(b)
		return err
	}
	b, err := json.MarshalIndent(obj, "", "    ")
	if err != nil {
		return err
	}
	_, err = s.out.Write(append(b, '\n'))
	return err
}

func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
